"""A finished rollback leaves a record: where the instance stood, what each compensation
returned, when and by whom (``rolled_back``), while the instance is idle again."""

from __future__ import annotations

from django_workflows.engine import Operation, Step, from_json, to_json

from .helpers_work import chain, started


def refund(result, ctx):
    return {"refund": f"re_for_{result}"}


def order() -> object:
    return chain(
        Step("pay", compensate=lambda ctx: "voucher-cancelled", operations=[
            Operation("charge", run=lambda ctx: "ch_1", rollback=refund)]),
        Step("ship", operations=[Operation("label", run=lambda ctx: "lb_1")]),
        workflow_id="order")


def rolled_back(actor: str | None = "12"):
    x, instance = started(order(), state={"sku": "A1"})
    x.next(instance)
    x.actor = actor
    x.clock.advance(5)
    x.rollback(instance)
    return x, instance


def test_the_rollback_resets_the_instance_as_the_rule_says():
    x, instance = rolled_back()

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.history, snapshot.operations) == ("idle", (), ())
    assert snapshot.state == {}


def test_the_record_keeps_where_the_instance_stood_before():
    x, instance = rolled_back()

    record = x.snapshot(instance).rolled_back
    assert record is not None and record.before is not None
    before = record.before
    assert (before.status, before.current_step, before.history, before.completed_steps) == (
        "running", "ship", ("pay", "ship"), ("pay",))
    assert before.state == {"sku": "A1"}


def test_the_record_says_when_and_by_whom():
    x, instance = rolled_back(actor="12")

    record = x.snapshot(instance).rolled_back
    assert record.by == "12"
    assert record.started_at == x.clock.now() and record.finished_at == x.clock.now()


def test_the_record_keeps_each_compensation_with_what_it_returned():
    x, instance = rolled_back()

    items = x.snapshot(instance).rolled_back.items
    assert [(i.label, i.status, i.result) for i in items] == [
        ("operation:charge", "done", {"refund": "re_for_ch_1"}),
        ("step:pay", "done", "voucher-cancelled")]
    assert all(i.finished_at is not None for i in items)


def test_each_compensate_event_carries_what_the_compensation_returned():
    x, instance = rolled_back()

    found = [(e.data["item"], e.data.get("result")) for e in x.events_of(instance)
             if e.type == "compensate"]
    assert found == [("operation:charge", {"refund": "re_for_ch_1"}),
                     ("step:pay", "voucher-cancelled")]


def test_a_compensation_returning_no_json_is_recorded_as_text():
    x, instance = started(chain(Step("pay", compensate=lambda ctx: object.__new__(Marker)),
                                workflow_id="odd"))
    x.next(instance)

    x.rollback(instance)

    assert x.snapshot(instance).rolled_back.items[0].result == "a marker"


class Marker:
    def __str__(self) -> str:
        return "a marker"


def test_the_record_stays_once_the_instance_starts_again():
    x, instance = rolled_back()

    x.start(instance)

    assert x.snapshot(instance).rolled_back.before.current_step == "ship"


def test_the_record_round_trips_through_json():
    x, instance = rolled_back()
    snapshot = x.snapshot(instance)

    assert from_json(to_json(snapshot)) == snapshot
