"""A property-based fuzz of the API's headers: If-Match, Idempotency-Key, Content-Type, Accept.

The schemathesis fuzz (test_fuzz.py) sends what the OpenAPI schema declares, so
its headers keep to their patterns, and the schema cannot declare Content-Type
or Accept at all. Here hypothesis sends any of them to every kind of endpoint,
in process with Django's test client: tags of thousands of digits, keys that are
not ASCII, bodies declared (and encoded) in UTF-7, latin-1 or UTF-16, media
types and Accept values of every shape. No answer may be a 5xx, and every error
must be the JSON of DESIGN.md §4 (``detail`` and ``code``), or DRF's browsable
page showing it to a client that asked for HTML. The test prints how many
requests it made.

``DWF_FUZZ_EXAMPLES`` scales it with the schema fuzz: 10 requests per example
(default 20: 200 requests, a few seconds).
"""

from __future__ import annotations

import html
import json
import os
from typing import Any

import pytest
from django.utils.http import parse_header_parameters

from django_workflows.api.parsing import IDEMPOTENCY_KEY_PATTERN, IF_MATCH_PATTERN
from django_workflows.services import COMMAND_NAMES
from tests.api.test_fuzz import real_instances

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db(transaction=True),
              pytest.mark.slow]

EXAMPLES = int(os.environ.get("DWF_FUZZ_EXAMPLES", "20")) * 10

MEDIA_TYPES = ["application/json", "APPLICATION/JSON", "application/json-patch+json",
               "application/merge-patch+json", "Application/Merge-Patch+JSON",
               "text/plain", "application/x-www-form-urlencoded",
               "multipart/form-data; boundary=xyz", "*/*", "application/*", ""]
CHARSETS = [None, "utf-8", "UTF-8", '"utf-8"', "Utf-8", "utf8", "utf-7", "UTF-7", "latin-1",
            "iso-8859-1", "utf-16", "utf-16-le", "utf-32", "us-ascii", "cp1252", "bogus",
            "undefined", ""]
ACCEPTS = ["application/json", "*/*", "text/html", "application/xml", "application/json; q=0",
           "application/vnd.oai.openapi", "application/vnd.oai.openapi+json",
           "text/html, */*;q=0.1", "application/json; version=2", ""]


def encoded(text: str, charset: str | None) -> bytes:
    """The body as a client declaring ``charset`` would send it."""
    name = (charset or "utf-8").strip('"')
    try:
        return text.encode(name, errors="replace")
    except (LookupError, UnicodeError):  # no such codec, or one that encodes nothing
        return text.encode("utf-8")


def requests_to(instances: list[str]) -> Any:
    """(method, path, body text or None): every kind of endpoint the API has."""
    from hypothesis import strategies as st

    from tests.strategies import json_text

    ids = st.sampled_from(instances)
    # Bodies are mostly good ones, so that the headers are what the API has to judge.
    create = st.fixed_dictionaries({"workflow": st.sampled_from(["wizard", "long-manual"])},
                                   optional={"start": st.booleans()}).map(json.dumps)
    command = st.sampled_from([None, "{}", '{"reason": "fuzz: é ✓"}'])
    state = st.fixed_dictionaries({"email": st.text(max_size=10), "plan": st.none()}).map(
        lambda value: json.dumps({"state": value}, ensure_ascii=False))
    return st.one_of(
        st.tuples(st.just("POST"), st.just("/api/instances/"), create | create | json_text()),
        st.tuples(st.just("POST"), st.builds(lambda pk, name: f"/api/instances/{pk}/{name}/",
                                             ids, st.sampled_from(COMMAND_NAMES)),
                  command | command | json_text()),
        st.tuples(st.just("PATCH"), ids.map(lambda pk: f"/api/instances/{pk}/state/"),
                  state | state | json_text(object_keys=("email", "plan")).map(
                      lambda text: f'{{"state": {text}}}')),
        st.tuples(st.just("GET"), st.sampled_from(["/api/", "/api/instances/",
                                                   "/api/workflows/", "/api/schema/",
                                                   "/api/schema/?format=json"]), st.none()),
        st.tuples(st.just("GET"), ids.map(lambda pk: f"/api/instances/{pk}/"), st.none()),
    )


def test_fuzzing_the_api_s_headers_finds_no_server_error_and_only_json_errors(capsys):
    import hypothesis
    from hypothesis import strategies as st
    from rest_framework.test import APIClient

    from tests.factories import UserFactory
    from tests.strategies import header_characters, long_digits

    fuzzer = UserFactory(username="fuzzer", superuser=True)
    client = APIClient(raise_request_exception=False)  # a 500 is counted, not raised
    client.force_authenticate(fuzzer)
    instances = real_instances(fuzzer)
    header_text = st.text(header_characters, max_size=40)
    if_match = st.one_of(
        st.none(), st.from_regex(IF_MATCH_PATTERN, fullmatch=True),
        st.builds(lambda digits, form: form.format(digits), long_digits(),
                  st.sampled_from(['"{}"', "{}", 'W/"{}"', ' "{}" ', '"{}", "1"'])),
        header_text)
    idempotency_key = st.none() | st.from_regex(IDEMPOTENCY_KEY_PATTERN, fullmatch=True) \
        | header_text
    content_type = st.builds(
        lambda media, charset, extra: media + (f"; charset={charset}" if charset is not None
                                               else "") + extra,
        st.just("application/json") | st.just("application/json")
        | st.sampled_from(MEDIA_TYPES) | header_text,
        st.sampled_from(CHARSETS) | header_text,
        st.sampled_from(["", "; q=1", "; charset=utf-8", ";;", "; boundary="]))
    accept = st.none() | st.sampled_from(ACCEPTS) | header_text

    made: list[int] = []
    server_errors: list[str] = []
    not_json: list[str] = []
    other_charsets: list[str] = []  # a body in another charset than UTF-8, accepted

    @hypothesis.settings(max_examples=EXAMPLES, deadline=None, database=None,
                         phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(request=requests_to(instances), if_match=if_match,
                      key=idempotency_key, content_type=content_type, accept=accept)
    def send(request: tuple[str, str, str | None], if_match: str | None, key: str | None,
             content_type: str, accept: str | None) -> None:
        method, path, body = request
        headers = {name: value for name, value in (
            ("HTTP_IF_MATCH", if_match), ("HTTP_IDEMPOTENCY_KEY", key),
            ("HTTP_ACCEPT", accept)) if value is not None}
        charset = parse_header_parameters(content_type)[1].get("charset")
        data = b"" if body is None else encoded(body, charset)
        response = client.generic(method, path, data, content_type=content_type, **headers)
        made.append(response.status_code)
        sent = f"{method} {path} {headers} Content-Type={content_type!r} body={data[:200]!r}"
        if response.status_code >= 500:
            server_errors.append(f"{response.status_code}: {sent}\n{response.exc_info!r}")
            return
        if data and charset is not None and charset.lower() != "utf-8" \
                and response.status_code < 300:
            other_charsets.append(f"{response.status_code}: {sent}")
        schema = path.startswith("/api/schema/") and response.status_code == 200
        # DRF's browsable API (on in the test settings), for a client that asked for HTML.
        page = response["Content-Type"].startswith("text/html") and accept is not None \
            and any(kind in accept.lower() for kind in ("text/html", "text/*"))
        if page:
            if response.status_code >= 400 and '"code":' not in html.unescape(
                    response.content.decode()):
                not_json.append(f"{response.status_code} page without the error's code: {sent}")
        elif not schema and not response["Content-Type"].startswith("application/json"):
            not_json.append(f"{response.status_code} {response['Content-Type']}: {sent}")
        elif response.status_code >= 400:
            error = response.json()
            if not (isinstance(error, dict) and error.get("detail") and error.get("code")):
                not_json.append(f"{response.status_code} without detail and code: {sent}")

    send()

    with capsys.disabled():
        print(f"\nfuzz of headers: {len(made)} requests, {len(server_errors)} server errors, "
              f"{len(not_json)} errors that are not the API's JSON, {len(other_charsets)} "
              f"bodies accepted in another charset than UTF-8; statuses {sorted(set(made))}")
    assert (server_errors, not_json, other_charsets) == ([], [], []), "\n\n".join(
        [*server_errors[:5], *not_json[:5], *other_charsets[:5]])
