"""The REST API (django-ninja): `/api/v1/...`, OpenAPI at `/api/openapi.json`, docs at `/api/docs`.

Every route needs a caller: a bearer token or a Django session (see `console.auth`); so do the document
and the docs page. Errors are JSON
`{error, code, detail}` (see `console.api.errors`).
"""

from __future__ import annotations

from typing import Any

from ninja import NinjaAPI

from console import auth
from console.api import errors, executions, openapi, operators, system, workflows
from console.api.docs import VendoredSwagger

__all__ = ["api"]


class FlowdeckAPI(NinjaAPI):
    """Ninja's API, with each workflow's input schemas added to the OpenAPI document."""

    def get_openapi_schema(self, *, path_prefix: str | None = None, path_params: Any = None) -> Any:
        document = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        return openapi.add_workflow_inputs(document)


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
for module in (workflows, executions, operators, system):
    api.add_router("/v1", module.router)
