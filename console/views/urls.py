"""The console's page routes (mounted by `flowdeck.console.urls`, which passes each through `console.gate`:
its headers, `Cache-Control: private, no-store` among them, and its checks)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, path, register_converter, reverse_lazy

from flowdeck.console.views import (
    account,
    activity,
    bulk,
    converters,
    execution,
    executions,
    favicon,
    limits,
    metrics,
    node,
    overview,
    parked,
    resumed,
    saved_views,
    schedules,
    timeline,
    workflow_node,
    workflows,
)

__all__ = ["urlpatterns"]

register_converter(converters.StoredId, "stored_id")

E = "executions/<stored_id:execution_id>/"

# The console's URL names live in their own namespace, so they never clash with the host project's:
# reverse("flowdeck:console-executions"), {% url 'flowdeck:login' %}.
app_name = "flowdeck"

urlpatterns: list[URLPattern] = [
    path("", overview.overview, name="console-home"),
    path("favicon.ico", favicon.favicon, name="console-favicon"),
    path("overview/numbers/", overview.overview_numbers, name="console-overview-numbers"),
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="flowdeck/console/login.html", next_page=reverse_lazy("flowdeck:console-executions")
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(next_page=reverse_lazy("flowdeck:login")), name="logout"),
    path("executions/", executions.executions, name="console-executions"),
    path("executions/cancel/", executions.cancel_selected, name="console-cancel-selected"),
    path("executions/bulk/", bulk.confirm, name="console-bulk"),
    path("executions/bulk/run/", bulk.submit, name="console-bulk-submit"),
    path("executions/bulk/<int:op_id>/", bulk.operation, name="console-bulk-operation"),
    path("executions/bulk/<int:op_id>/progress/", bulk.operation_progress, name="console-bulk-progress"),
    path("executions/bulk/<int:op_id>/go/", bulk.go, name="console-bulk-go"),
    path("executions/bulk/<int:op_id>/again/", bulk.again, name="console-bulk-again"),
    path("executions/views/", saved_views.create_view, name="console-saved-view-create"),
    path("executions/views/<int:view_id>/delete/", saved_views.delete_view, name="console-saved-view-delete"),
    path(E + "panel/", execution.panel, name="console-execution-panel"),
    path(E + "inputs/", execution.inputs, name="console-execution-inputs"),
    path(E + "fields/", execution.fields, name="console-execution-fields"),
    path(E + "history/", execution.history, name="console-execution-history"),
    path(E + "diagram/<str:format>/", execution.diagram, name="console-execution-diagram"),
    path(E + "timeline/", timeline.timeline_fragment, name="console-execution-timeline"),
    path(E + "history.json", timeline.history_json, name="console-execution-history-json"),
    path(E + "signal/", execution.signal, name="console-execution-signal"),
    path(E + "cancel/", execution.cancel, name="console-execution-cancel"),
    path(E + "resume/", execution.resume, name="console-execution-resume"),
    path(E + "resumed/", resumed.resumed, name="console-execution-resumed"),
    path(E + "answer/", execution.answer, name="console-execution-answer"),
    path(E + "end/", execution.end, name="console-execution-end"),
    path(E + "nodes/<path:key>", node.node, name="console-execution-node"),
    path("executions/<stored_id:execution_id>", execution.execution, name="console-execution"),
    path("workflows/", workflows.workflows, name="console-workflows"),
    path("workflows/<str:workflow_id>/", workflows.workflow, name="console-workflow"),
    path("workflows/<str:workflow_id>/counts/", workflows.workflow_counts, name="console-workflow-counts"),
    path(
        "workflows/<str:workflow_id>/diagram/<str:format>/",
        workflows.workflow_diagram,
        name="console-workflow-diagram",
    ),
    # a node's numbers, for the side panel (the page's #node-panel carries the prefix in data-node-url)
    path("workflows/<str:workflow_id>/nodes/", workflow_node.no_node, name="console-workflow-nodes"),
    path(
        "workflows/<str:workflow_id>/nodes/<path:key>",
        workflow_node.workflow_node,
        name="console-workflow-node",
    ),
    path("workflows/<str:workflow_id>/start/", workflows.start, name="console-workflow-start"),
    path("parked/", parked.parked, name="console-parked"),
    path("parked/<str:workflow_id>/<str:digest>/rows/", parked.parked_rows, name="console-parked-rows"),
    path(E + "parked/", parked.parked_execution, name="console-parked-execution"),
    path(
        "parked/<str:workflow_id>/<str:digest>/resume/", workflows.parked_resume, name="console-parked-resume"
    ),
    path(
        "parked/<str:workflow_id>/<str:digest>/cancel/", workflows.parked_cancel, name="console-parked-cancel"
    ),
    path("metrics", metrics.metrics_page, name="console-metrics"),
    path("health/", workflows.health, name="console-health"),
    path("health/executors/", workflows.health_executors, name="console-health-executors"),
    path("account/", account.account, name="console-account"),
    path("activity/", activity.activity_page, name="console-activity"),
    path("schedules/", schedules.schedules_page, name="console-schedules"),
    path("limits/", limits.limits_page, name="console-limits"),
    path("schedules/new/", schedules.create, name="console-schedule-create"),
    path("schedules/<str:name>/", schedules.schedule_page, name="console-schedule"),
    path("schedules/<str:name>/backfill/", schedules.backfill, name="console-schedule-backfill"),
    path("schedules/<str:name>/<str:verb>/", schedules.action, name="console-schedule-action"),
]
