"""What a task shows the person deciding (``Task(show=...)``), read from the state."""

from __future__ import annotations

import pytest

from django_workflows.engine import DefinitionError, HookContext, Step, Task
from django_workflows.engine.shown import Shown, shown

FORM = {"type": "object", "properties": {"decision": {"enum": ["approved", "rejected"]}}}
CLAIM = {"amount": 120.5, "currency": "EUR", "description": "Train to Lyon <b>",
         "receipt": {"url": "https://files.example.com/r/1.pdf", "pages": 2},
         "lines": [{"what": "ticket"}], "paid": False}


def lines(show, state=CLAIM, **kwargs) -> list[Shown]:
    task = Step("approval", task=Task(FORM, show=show)).task
    assert task is not None
    ctx = HookContext(state=state, instance_id="i-1", workflow="expenses", step="approval")
    return shown(task, ctx, **kwargs)


def test_a_task_without_show_shows_nothing():
    assert lines(None) == []


def test_state_keys_are_shown_with_their_key_in_words_as_the_label():
    assert lines(["amount", "currency", "description", "paid"]) == [
        Shown("Amount", 120.5), Shown("Currency", "EUR"),
        Shown("Description", "Train to Lyon <b>"), Shown("Paid", False)]


def test_a_dotted_path_reaches_inside_objects_and_lists():
    assert lines(["receipt.url", "lines.0.what"]) == [
        Shown("Receipt url", "https://files.example.com/r/1.pdf"),
        Shown("Lines 0 what", "ticket")]


def test_the_state_schemas_title_is_the_label_when_given():
    assert lines(["amount"], titles={"amount": "Amount spent"}) == [
        Shown("Amount spent", 120.5)]


def test_a_key_the_state_does_not_have_shows_as_missing():
    assert lines(["amount", "iban", "receipt.scan", "lines.3.what"]) == [
        Shown("Amount", 120.5), Shown("Iban", None, "missing"),
        Shown("Receipt scan", None, "missing"), Shown("Lines 3 what", None, "missing")]


def test_a_callable_returns_label_value_pairs_from_the_context():
    def show(ctx):
        return [("Amount", f"{ctx.state['amount']:.2f} {ctx.state['currency']}"),
                ("Step", ctx.step)]

    assert lines(show) == [Shown("Amount", "120.50 EUR"), Shown("Step", "approval")]


def test_a_callable_may_return_a_dict_and_values_that_are_not_json_are_text():
    from decimal import Decimal

    assert lines(lambda ctx: {"Amount": Decimal("120.50")}) == [Shown("Amount", "120.50")]


def test_a_callable_that_raises_is_one_error_line_and_the_caller_hears_the_error():
    heard = []

    def show(ctx):
        return [("Amount", ctx.state["no-such-key"])]

    assert lines(show, on_error=heard.append) == [Shown("Could not be shown", None, "error")]
    assert [type(error).__name__ for error in heard] == ["MissingStateKey"]


@pytest.mark.parametrize("result", ["amount", 42, [("just a label",)], ["ab"]])
def test_a_callable_that_returns_no_pairs_is_an_error_line(result):
    heard = []

    assert lines(lambda ctx: result, on_error=heard.append) == [
        Shown("Could not be shown", None, "error")]
    assert len(heard) == 1


def test_only_an_http_or_https_url_is_a_link():
    assert Shown("Receipt", "https://files.example.com/r/1.pdf").link == \
        "https://files.example.com/r/1.pdf"
    assert Shown("Receipt", "http://files.example.com/r/1.pdf").link is not None
    for value in ("javascript:alert(1)", "JavaScript://%0aalert(1)", "data:text/html,<b>",
                  "files.example.com/r/1.pdf", "/media/r/1.pdf", " https://x.example.com",
                  42, None):
        assert Shown("Receipt", value).link is None, value
    assert Shown("Receipt", None, "missing").link is None


@pytest.mark.parametrize("show", ["amount", 42, {"amount": "Amount"}, ["amount", 3],
                                  ["amount", ""], ["receipt..url"]])
def test_a_show_that_is_neither_keys_nor_a_callable_fails_at_definition_naming_its_step(show):
    with pytest.raises(DefinitionError, match=r'^Step "approval": task show must be a list of '
                                              r"state keys .* or a callable"):
        Step("approval", task=Task(FORM, show=show))


def test_a_tuple_of_keys_is_a_list_of_keys():
    assert lines(("currency",)) == [Shown("Currency", "EUR")]
