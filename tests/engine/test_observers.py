"""Observers: analytics and subscribers get every event; their errors change nothing."""

from __future__ import annotations

from django_workflows.engine import Event, Step, Workflow, deliver

from .helpers_navigation import chain, created, started, trail, wizard

EVENTS = [Event("start", "i1"), Event("step-enter", "i1", step="account")]


def recorder(log: list, name: str):
    return lambda event: log.append((name, event.type))


def failing(message: str):
    def observer(event):
        raise RuntimeError(message)

    return observer


# -- deliver ---------------------------------------------------------------------------------

def test_analytics_then_each_receiver_get_every_event_in_order():
    log: list = []
    definition = Workflow("w", analytics=recorder(log, "analytics"))

    deliver(definition, EVENTS, [recorder(log, "first"), recorder(log, "second")])

    assert log == [("analytics", "start"), ("first", "start"), ("second", "start"),
                   ("analytics", "step-enter"), ("first", "step-enter"),
                   ("second", "step-enter")]


def test_receivers_get_every_event_without_analytics():
    log: list = []

    deliver(Workflow("w"), EVENTS, [recorder(log, "receiver")])

    assert log == [("receiver", "start"), ("receiver", "step-enter")]


def test_an_error_of_analytics_goes_to_on_observer_error():
    reported: list = []
    definition = Workflow("w", analytics=failing("warehouse is down"),
                          on_observer_error=reported.append)

    deliver(definition, EVENTS[:1])

    assert [str(error) for error in reported] == ["warehouse is down"]


def test_receivers_still_get_the_event_when_analytics_raises():
    log: list = []
    definition = Workflow("w", analytics=failing("warehouse is down"),
                          on_observer_error=lambda error: None)

    deliver(definition, EVENTS, [recorder(log, "receiver")])

    assert log == [("receiver", "start"), ("receiver", "step-enter")]


def test_an_error_of_a_receiver_goes_to_on_observer_error_and_the_next_receiver_goes_on():
    log: list = []
    reported: list = []
    definition = Workflow("w", on_observer_error=reported.append)

    deliver(definition, EVENTS[:1], [failing("webhook timed out"), recorder(log, "second")])

    assert [str(error) for error in reported] == ["webhook timed out"]
    assert log == [("second", "start")]


def test_an_error_of_on_observer_error_is_swallowed():
    log: list = []
    definition = Workflow("w", analytics=failing("warehouse is down"),
                          on_observer_error=failing("pager is down"))

    errors = deliver(definition, EVENTS, [recorder(log, "receiver")])

    assert log == [("receiver", "start"), ("receiver", "step-enter")]
    assert [str(error) for error in errors] == ["warehouse is down", "pager is down"] * 2


def test_observer_errors_are_returned_for_logging_without_on_observer_error():
    errors = deliver(Workflow("w"), EVENTS[:1], [failing("webhook timed out")])

    assert [str(error) for error in errors] == ["webhook timed out"]


def test_delivering_without_errors_returns_no_errors():
    assert deliver(Workflow("w", analytics=lambda event: None), EVENTS) == []


# -- through the local executor ------------------------------------------------------------------

def test_subscribers_get_every_event_of_a_command():
    received: list = []
    x, instance = created(wizard("account", "plan"), observers=(received.append,))

    outcome = x.start(instance)

    assert received == list(outcome.events)
    assert trail(received) == [("start", None), ("step-enter", "account")]


def test_analytics_gets_every_event_of_a_command():
    received: list = []
    x, instance = started(wizard("account", "plan", analytics=received.append))

    x.next(instance)

    assert trail(received) == [("start", None), ("step-enter", "account"),
                               ("validate", "account"), ("step-leave", "account"),
                               ("step-enter", "plan")]


def test_a_raising_subscriber_changes_nothing():
    plain, plain_instance = started(wizard("account", "plan"))
    x, instance = started(wizard("account", "plan"), observers=(failing("webhook is down"),))

    outcome = x.next(instance)

    expected = plain.next(plain_instance)
    assert outcome.moved
    assert trail(outcome.events) == trail(expected.events)
    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step, snapshot.errors) == ("running", "plan", ())


def test_a_raising_analytics_goes_to_on_observer_error_and_changes_nothing():
    reported: list = []
    definition = wizard("account", "plan", analytics=failing("warehouse is down"),
                        on_observer_error=reported.append)
    x, instance = started(definition)

    outcome = x.next(instance)

    assert outcome.moved
    assert x.snapshot(instance).current_step == "plan"
    assert len(reported) == 5  # start, step-enter, validate, step-leave, step-enter
    assert x.observer_errors == reported


def test_events_of_a_nested_child_go_to_the_childs_analytics():
    parent_events: list = []
    child_events: list = []
    child = wizard("c1", id="child", analytics=child_events.append)
    x, instance = started(chain(Step("account"), Step("setup", nested=child),
                                analytics=parent_events.append))

    x.next(instance)

    child_id = x.snapshot(instance).nested.id
    assert {event.instance_id for event in child_events} == {child_id}
    assert trail(child_events) == [("start", None), ("step-enter", "c1")]
    assert child_id not in {event.instance_id for event in parent_events}
