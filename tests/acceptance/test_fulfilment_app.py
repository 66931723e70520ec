"""The fulfilment example app: its flows are discovered, its migrations match its models, and its services
write each side effect once per idempotency key."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from examples.fulfilment import flows, services
from examples.fulfilment import models as ledger
from flowdeck.console.discovery import registered_flows
from tests.store.django_support import database_access

__all__ = ["database_access"]


def test_discovery_serves_the_declared_flows() -> None:
    found = registered_flows()
    assert {k: found[k] for k in flows.FLOWS} == flows.FLOWS


def test_models_need_no_new_migration(database_access: None) -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", "fulfilment", check=True, dry_run=True, stdout=out, stderr=out)
    except SystemExit:
        pytest.fail(f"examples/fulfilment/models.py changed without a migration:\n{out.getvalue()}")


@pytest.mark.django_db
def test_a_repeated_call_counts_itself_and_writes_nothing_new() -> None:
    first = services.charge_card("e1/payment~charge_id", "e1", "o-1", 1450, "visa")
    again = services.charge_card("e1/payment~charge_id", "e1", "o-1", 1450, "visa")
    assert first == again == "ch-e1/payment~charge_id"
    rows = list(ledger.Charge.objects.values_list("key", "execution_id", "amount_cents", "calls"))
    assert rows == [("e1/payment~charge_id", "e1", 1450, 2)]

    services.refund_charge(first)
    services.refund_charge(first)
    assert list(ledger.Refund.objects.values_list("key", "execution_id", "charge_id", "calls")) == [
        (f"refund:{first}", "e1", first, 2)
    ]


@pytest.mark.django_db
def test_refusals_and_mistakes_write_nothing() -> None:
    order = services.Order(id="o-2", customer="ada", items=[services.Item(sku="w", qty=1, price=5)])
    with pytest.raises(services.CardDeclined, match="card declined for order o-2"):
        services.charge_card("e2/payment~charge_id", "e2", "o-2", 5, "declined")
    with pytest.raises(services.ShipmentRefused, match="no carrier ships order o-2 to AQ"):
        services.ship("e2/ship", "e2", order.model_copy(update={"country": "AQ"}))
    with pytest.raises(KeyError):
        services.ship("e2/ship", "e2", order.model_copy(update={"country": "Atlantis"}))
    with pytest.raises(services.OutOfStock):
        services.reserve_stock("e2/reservations~0", "e2", services.Item(sku="out-of-stock-x", qty=1, price=1))
    assert (ledger.Charge.objects.count(), ledger.Shipment.objects.count()) == (0, 0)
    assert ledger.Reservation.objects.count() == 0
