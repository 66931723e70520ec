"""The Django admin's page of API tokens: list them, make one (its secret shown once), revoke them.

As `flow token` does (`console.tokens`): only a token's digest is stored, its secret is shown on the page
answering the form that made it and never again, and a revoked token is kept (refused by the API from
its next request on) rather than deleted. Making tokens needs the `flowdeck_console.add_apitoken` permission,
revoking `console.change_apitoken` (a superuser holds both); every staff member may look. Each change is
in the admin's own log (who, when, what).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html

from flowdeck.console.models import ApiToken, new_secret, token_digest
from flowdeck.console.tokens import NAME_MAX

__all__ = ["ApiTokenAdmin"]


class TokenForm(forms.ModelForm):  # type: ignore[type-arg]
    """What a new token is made of: its user, a name, an optional expiry (in the future)."""

    class Meta:
        model = ApiToken
        fields = ("user", "name", "expires")

    def clean_name(self) -> str:
        name = str(self.cleaned_data["name"]).strip()
        if not name or len(name) > NAME_MAX or not name.isprintable():
            raise forms.ValidationError(f"a name of 1 to {NAME_MAX} printable characters")
        if name.isdigit():
            raise forms.ValidationError(
                "not only digits: `flowdeck token revoke` reads those as a token's id"
            )
        return name

    def clean_expires(self) -> Any:
        expires = self.cleaned_data["expires"]
        if expires is not None and expires <= timezone.now():
            raise forms.ValidationError("this instant is already past")
        return expires


class StateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Sequence[tuple[str, str]]:
        return [("active", "active"), ("expired", "expired"), ("revoked", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        if self.value() == "revoked":
            return queryset.filter(revoked__isnull=False)
        if self.value() == "expired":
            return queryset.filter(revoked__isnull=True, expires__lte=now)
        if self.value() == "active":
            return queryset.filter(revoked__isnull=True).filter(Q(expires__isnull=True) | Q(expires__gt=now))
        return queryset


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "user", "created", "last_used", "expires", "state", "console")
    list_filter = (StateFilter,)
    list_select_related = ("user",)
    search_fields = ("name", "user__username")
    ordering = ("-created",)
    actions = ("revoke",)
    readonly_fields = ("user", "name", "created", "last_used", "expires", "revoked", "state", "console")

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = TokenForm
        return super().get_form(request, obj, change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Sequence[str]:
        return self.readonly_fields if obj is not None else ()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Sequence[str]:
        return self.readonly_fields if obj is not None else TokenForm.Meta.fields

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoke instead: the record of the token stays

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            return  # every field of a made token is read-only
        secret = new_secret()
        obj.key_hash = token_digest(secret)
        super().save_model(request, obj, form, change)
        request._flowdeck_token_secret = secret  # type: ignore[attr-defined]  # for response_add, this request only

    def response_add(self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None) -> Any:
        """The secret on the answer itself, never in a message (Django keeps those in a cookie) nor behind
        a redirect; and never cached."""
        secret = getattr(request, "_flowdeck_token_secret", None)
        if secret is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "title": "Token made",
            "token": obj,
            "secret": secret,
            "list_url": reverse("admin:flowdeck_console_apitoken_changelist"),
        }
        response = TemplateResponse(request, "flowdeck/admin/console/apitoken/made.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.display(description="state")
    def state(self, token: ApiToken) -> str:
        return token.state(timezone.now())

    @admin.display(description="console")
    def console(self, token: ApiToken) -> str:
        try:
            url = reverse("flowdeck:console-account")
        except NoReverseMatch:
            return ""
        return format_html('<a href="{}#tokens">account page</a>', url)

    @admin.action(
        description="Revoke the selected tokens (the API refuses them at once)", permissions=["change"]
    )
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        # conditional, as `flowdeck token revoke`: an already revoked token keeps its first instant
        unrevoked = list(queryset.filter(revoked__isnull=True))
        revoked = ApiToken.objects.filter(pk__in=[t.pk for t in unrevoked], revoked__isnull=True).update(
            revoked=timezone.now()
        )
        for token in unrevoked:
            self.log_change(request, token, [{"changed": {"fields": ["revoked"]}}])
        already = len(queryset) - len(unrevoked)
        said = f" ({already} already were)" if already else ""
        messages.success(request, f"Revoked {revoked} token(s){said}; the API refuses them from now on.")
