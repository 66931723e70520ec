"""The REST API (django-ninja): `/api/v1/...`, OpenAPI at `/api/openapi.json`, docs at `/api/docs`.

Every route needs a caller: a bearer token or a Django session (see `console.auth`); so do the document
and the docs page. Errors are JSON
`{error, code, detail}` (see `flowdeck.console.api.errors`).
"""

from __future__ import annotations

from typing import Any

from ninja import NinjaAPI
from ninja.operation import Operation

from flowdeck.console import auth, schemas
from flowdeck.console.api import (
    activity,
    bulk,
    errors,
    executions,
    limits,
    openapi,
    operators,
    rate_limits,
    schedules,
    system,
    workflows,
)
from flowdeck.console.api.docs import VendoredSwagger

__all__ = ["api"]


class FlowdeckAPI(NinjaAPI):
    """Ninja's API, with each workflow's input schemas added to the OpenAPI document, operation ids that
    are the views' names (verbs: `search_executions`), and the methods each route documents."""

    def get_openapi_schema(self, *, path_prefix: str | None = None, path_params: Any = None) -> Any:
        document = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        return openapi.declare_text_rules(openapi.add_workflow_inputs(document), schemas.NO_NUL)

    def get_openapi_operation_id(self, operation: Operation) -> str:
        return operation.view_func.__name__

    def documented_methods(self, url_name: str) -> list[str] | None:
        """The methods the document declares for the route whose URL is named `url_name` (None when no
        route has that name). A route's undocumented operations (describing an execution named `search`
        at `/executions/search`) are served but not advertised in `Allow`."""
        for bound in self._get_bound_routers():
            for view in bound.path_operations.values():
                names = {
                    getattr(op, "url_name", None) or self.get_operation_url_name(op, router=bound.template)
                    for op in view.operations
                }
                if url_name in names:
                    return sorted({m for op in view.operations if op.include_in_schema for m in op.methods})
        return None


api = FlowdeckAPI(
    title="Flowdeck",
    version="1",
    description="Durable workflows: start, watch, signal and steer executions.",
    auth=[auth.BearerToken(), auth.SessionCookie()],
    urls_namespace="flowdeck-api",
    docs=VendoredSwagger(),
    docs_decorator=auth.callers_only,
)
errors.install(api)
# bulk before executions: POST /executions/bulk is not an execution named bulk
for module in (workflows, bulk, executions, operators, activity, schedules, limits, rate_limits, system):
    api.add_router("/v1", module.router)
