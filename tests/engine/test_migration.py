"""Loading a persisted instance: as it is under the same version, through migrate otherwise."""

from __future__ import annotations

import pytest

from django_workflows.engine import Env, MigrationRequired, Next, Step, apply, load, to_json

from .helpers_navigation import chain, started, wizard


def persisted(definition, state=None, moves: int = 0) -> dict:
    """The JSON of an instance of ``definition`` after ``moves`` calls of next."""
    x, instance = started(definition, state)
    for _ in range(moves):
        x.next(instance)
    return to_json(x.snapshot(instance))


V1 = wizard("account", "plan", "confirm", id="signup", version=1, initial={"mail": ""})


def signup_v2(migrate=None):
    return wizard("account", "plan", "confirm", id="signup", version=2, initial={"email": ""},
                  migrate=migrate)


def rename_mail(data):
    state = dict(data["state"])
    state["email"] = state.pop("mail")
    return {**data, "state": state, "version": 2}


def test_an_instance_of_the_same_version_loads_as_it_was_saved():
    x, instance = started(V1, {"mail": "a@example.com"})
    x.next(instance)

    assert load(V1, to_json(x.snapshot(instance))) == x.snapshot(instance)


def test_an_instance_of_the_same_version_is_not_migrated():
    calls = []
    definition = wizard("account", id="signup", migrate=lambda data: calls.append(data))

    load(definition, persisted(definition))

    assert calls == []


def test_an_instance_of_an_older_version_is_passed_to_migrate_as_persisted():
    data = persisted(V1, {"mail": "a@example.com"}, moves=1)
    received = []

    load(signup_v2(lambda given: received.append(given) or rename_mail(given)), data)

    assert received == [data]


def test_what_migrate_returns_is_the_instance():
    data = persisted(V1, {"mail": "a@example.com"}, moves=1)

    snapshot = load(signup_v2(rename_mail), data)

    assert snapshot.state == {"email": "a@example.com"}
    assert snapshot.current_step == "plan"
    assert snapshot.completed_steps == ("account",)


def test_a_migration_may_be_a_coroutine_as_every_other_hook():
    async def rename_later(data):
        return rename_mail(data)

    snapshot = load(signup_v2(rename_later), persisted(V1, {"mail": "a@example.com"}, moves=1))

    assert snapshot.state == {"email": "a@example.com"}


def test_a_migrated_instance_has_the_current_version():
    data = persisted(V1, {"mail": ""})

    snapshot = load(signup_v2(lambda given: dict(given)), data)

    assert snapshot.version == 2


def test_migrate_cannot_change_the_callers_data():
    data = persisted(V1, {"mail": "a@example.com"})

    def migrate(given):
        given["state"]["mail"] = "changed"
        given["history"].append("ghost")
        return rename_mail(given)

    load(signup_v2(migrate), data)

    assert data["state"] == {"mail": "a@example.com"}
    assert data["history"] == ["account"]


def test_an_instance_saved_by_a_newer_version_is_refused_not_migrated_back():
    newer = persisted(signup_v2(), {"email": ""})
    received = []

    with pytest.raises(MigrationRequired) as raised:
        load(wizard("account", "plan", "confirm", id="signup", version=1,
                    migrate=lambda given: received.append(given["version"]) or given), newer)

    assert str(raised.value) == ('Workflow "signup" was saved under version 2, newer than '
                                 "this process's version 1")
    assert received == []


def test_without_a_migration_loading_an_older_instance_fails():
    data = persisted(V1, {"mail": ""})

    with pytest.raises(MigrationRequired) as raised:
        load(signup_v2(), data)

    assert str(raised.value) == 'Workflow "signup" requires a migration from version 1'


def test_a_migration_that_returns_nothing_fails_the_load():
    data = persisted(V1, {"mail": ""})

    with pytest.raises(MigrationRequired) as raised:
        load(signup_v2(lambda given: None), data)

    assert str(raised.value) == 'Workflow "signup" requires a migration from version 1'


def test_a_migrated_instance_takes_commands():
    data = persisted(V1, {"mail": "a@example.com"}, moves=1)
    definition = signup_v2(rename_mail)

    outcome = apply(definition, load(definition, data), Next(), Env(now=0.0))

    assert outcome.moved
    assert outcome.snapshot.current_step == "confirm"
    assert outcome.snapshot.version == 2


# -- nested children (each is its own row, loaded with nested=True) -------------------------

CHILD_V1 = wizard("c1", "c2", id="address", version=1, initial={"street": ""})


def child_data() -> dict:
    """The persisted child of an order whose "address" step runs CHILD_V1."""
    parent = chain(Step("account"), Step("address", nested=CHILD_V1), Step("done"), id="order")
    return persisted(parent, moves=1)["nested"]


def test_a_nested_child_saved_under_an_older_version_is_migrated_by_its_own_definition():
    child_v2 = wizard("c1", "c2", id="address", version=2, initial={"line1": ""},
                      migrate=lambda given: {**given, "state": {"line1": ""}})

    snapshot = load(child_v2, child_data(), nested=True)

    assert (snapshot.version, snapshot.state) == (2, {"line1": ""})
    assert snapshot.current_step == "c1"
    assert snapshot.parent_step == "address"


def test_a_nested_child_without_a_migration_fails_the_load_naming_it():
    child_v2 = wizard("c1", "c2", id="address", version=2)

    with pytest.raises(MigrationRequired) as raised:
        load(child_v2, child_data(), nested=True)

    assert str(raised.value) == 'Nested workflow "address" requires a migration from version 1'
