"""The shop's pages: place an order (the row and its fulfilment's start in one transaction), and see it."""

from __future__ import annotations

from django import forms
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from flowdeck.console import client
from orders.models import Order

__all__ = ["order", "place_order"]


class OrderForm(forms.ModelForm):
    quantity = forms.IntegerField(min_value=1, max_value=100)

    class Meta:
        model = Order
        fields = ["customer", "item", "quantity"]


def place_order(request: HttpRequest) -> HttpResponse:
    """GET: the form. POST: the order and its fulfilment, both or neither (no outbox table, no signal
    handler): the start joins the view's transaction, and the workers are woken when it commits."""
    form = OrderForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            placed = form.save()
            client.start("fulfil_order", execution_id=placed.execution_id, order_id=placed.pk)
        return redirect("order", order_id=placed.pk)
    return render(request, "orders/place.html", {"form": form}, status=400 if form.errors else 200)


def order(request: HttpRequest, order_id: int) -> HttpResponse:
    placed = get_object_or_404(Order, pk=order_id)
    console_url = reverse("flowdeck:console-execution", kwargs={"execution_id": placed.execution_id})
    return render(request, "orders/order.html", {"order": placed, "console_url": console_url})
