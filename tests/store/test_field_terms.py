"""The `field:` term's spelling: what it parses to, and the refusals that say how it is written."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.field_terms import TERM_PATTERN, FieldMatch, parse_field_term, split_terms
from store.filters import FilterParseError


@pytest.mark.parametrize(
    ("term", "match"),
    [
        ("field:order.customer=ada", FieldMatch("order", ("customer",), "ada")),
        ("field:order.items.0.sku=a-1", FieldMatch("order", ("items", 0, "sku"), "a-1")),
        ('field:order."0"=x', FieldMatch("order", ("0",), "x")),
        ("field:approval=yes", FieldMatch("approval", (), "yes")),
        ("field:charge~id.amount=12", FieldMatch("charge~id", ("amount",), 12)),
        ("field:o.total=-1.5e2", FieldMatch("o", ("total",), -150.0)),
        ("field:o.n=01", FieldMatch("o", ("n",), "01")),
        ('field:o.n="12"', FieldMatch("o", ("n",), "12")),
        ("field:o.paid=true", FieldMatch("o", ("paid",), True)),
        ("field:o.note=null", FieldMatch("o", ("note",), None)),
        ("field:o.s=NaN", FieldMatch("o", ("s",), "NaN")),
        ('field:o.s=""', FieldMatch("o", ("s",), "")),
        ('field:o.s="a \\"b\\" = c"', FieldMatch("o", ("s",), 'a "b" = c')),
        ("field:o.url=https://x.test/a?b=c", FieldMatch("o", ("url",), "https://x.test/a?b=c")),
        ('field:"my.node"."a b"=1', FieldMatch("my.node", ("a b",), 1)),
        ("field:0.x=1", FieldMatch("0", ("x",), 1)),
        ("field:o.³=1", FieldMatch("o", ("³",), 1)),  # a digit to Unicode, not a list index (schemathesis)
    ],
)
def test_a_term_parses_to_its_match(term: str, match: FieldMatch) -> None:
    assert parse_field_term(term) == match
    assert parse_field_term(match.show()) == match


@pytest.mark.parametrize(
    ("term", "problem"),
    [
        ("order.customer=ada", "is not a field term"),
        ("field:order.customer", "has no '=<value>'"),
        ("field:order.customer=", "has an empty value"),
        ("field:=ada", "expected a path key"),
        ("field:order..customer=ada", "expected a path key"),
        ('field:order.""=ada', "expected a path key"),
        ('field:order.customer="ada', "closing quote"),
        ('field:order.customer="a\\nb"', "escapes only"),
        ("field:order.customer={}", "must be a number, true, false, null or text"),
        ("field:order.customer=[1]", "must be a number, true, false, null or text"),
        ('field:order.customer=a"b', "must be a number, true, false, null or text"),
        ('field:order."a\\"b"=1', "cannot hold quotes, backslashes"),
        ('field:order.c="\\u0000"', "escapes only"),
        ("field:order.c=\ud800", "unpaired surrogate"),
        ("field:order.c\x00=1", "NUL"),
    ],
)
def test_a_malformed_term_says_what_is_wrong(term: str, problem: str) -> None:
    with pytest.raises(FilterParseError, match=problem.replace("[", r"\[")):
        parse_field_term(term)


def test_a_search_box_splits_into_terms_and_words_outside_quotes() -> None:
    matches, words = split_terms('demo- field:order.customer="Ada Lovelace"  field:order.total=12')
    assert words == ["demo-"]
    assert matches == [
        FieldMatch("order", ("customer",), "Ada Lovelace"),
        FieldMatch("order", ("total",), 12),
    ]
    with pytest.raises(FilterParseError, match="unclosed double quote"):
        split_terms('field:order.customer="Ada')


@given(st.text(alphabet=st.sampled_from([*'field:.="\\ {[0123456789-+eE', "a", "é", "\x01", "\x00", "\n"])))
def test_the_documented_pattern_is_exactly_what_parses(tail: str) -> None:
    """The REST document states TERM_PATTERN; a term it admits parses, and one it refuses does not."""
    for term in (tail, "field:" + tail, "field:a" + tail, "field:a=" + tail):
        admitted = re.fullmatch(TERM_PATTERN, term) is not None
        try:
            parse_field_term(term)
            parsed = True
        except FilterParseError:
            parsed = False
        assert admitted == parsed, term
