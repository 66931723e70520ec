"""The `field:` term's spelling: what it parses to, and the refusals that say how it is written."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowdeck.store import filter_limits
from flowdeck.store.field_terms import (
    TERM_PATTERN,
    FieldMatch,
    TextMatch,
    parse_field_term,
    parse_terms,
    split_terms,
)
from flowdeck.store.filters import FilterParseError


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
        # issue 29: prefix, contains (their value is always text) and ranges (a number)
        ("field:order.customer^=Ad", FieldMatch("order", ("customer",), "Ad", "^=")),
        ("field:order.customer~=love", FieldMatch("order", ("customer",), "love", "~=")),
        ("field:order.customer~=12", FieldMatch("order", ("customer",), "12", "~=")),
        ('field:order.customer^="a b"', FieldMatch("order", ("customer",), "a b", "^=")),
        ("field:o.total>100", FieldMatch("o", ("total",), 100, ">")),
        ("field:o.total>=-1.5", FieldMatch("o", ("total",), -1.5, ">=")),
        ("field:o.total<1e3", FieldMatch("o", ("total",), 1000.0, "<")),
        ("field:o.total<=0", FieldMatch("o", ("total",), 0, "<=")),
        ("field:pay~charge.id~=ch", FieldMatch("pay~charge", ("id",), "ch", "~=")),  # ~ in a key, then ~=
        ('field:o."a~"=1', FieldMatch("o", ("a~",), 1)),  # a key ending in ~ is quoted
        ('field:o."<b>"=1', FieldMatch("o", ("<b>",), 1)),
        ("field:o.x=>5", FieldMatch("o", ("x",), ">5")),  # `=` then the text ">5"
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
        ("field:order.total>ten", "compares numbers"),
        ("field:order.total>=1e999", "compares numbers"),
        ('field:order.total<"1"', "compares numbers"),
        ("field:order.total>", "compares numbers"),
        ("field:order.customer~=", "has an empty value"),
        ("text:", "has an empty value"),
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


def test_a_text_term_is_a_term_of_its_own() -> None:
    """Issue 29: `text:` searches failure and stop messages; quoted, it holds spaces."""
    matches, words = split_terms('demo- text:"card declined" field:o.n>=2 text:12')
    assert (words, matches) == (
        ["demo-"],
        [TextMatch("card declined"), FieldMatch("o", ("n",), 2, ">="), TextMatch("12")],
    )
    assert parse_field_term(TextMatch('say "hi"').show()) == TextMatch('say "hi"')
    assert parse_terms(["text:x"] * 20) == [TextMatch("x")] * 20
    with pytest.raises(FilterParseError, match="at most 20"):
        parse_terms(["text:x"] * 21)


_PIECES = [*'field:.="\\ {[0123456789-+eE<>^~', "text:", "a", "é", "\x01", "\x00", "\n"]


@given(st.lists(st.sampled_from(_PIECES)).map("".join))
def test_the_documented_pattern_is_exactly_what_parses(tail: str) -> None:
    """The REST document states TERM_PATTERN; a term it admits parses, and one it refuses does not."""
    prefixes = ("", "field:", "field:a", "field:a=", "field:a>", "text:")
    for term in (prefix + tail for prefix in prefixes):
        admitted = re.fullmatch(TERM_PATTERN, term) is not None
        try:
            parse_field_term(term)
            parsed = True
        except FilterParseError:
            parsed = False
        assert admitted == parsed, term


DEEP = "field:o." + ".".join(["k"] * 1000) + "=1"
DEEPER = "field:o." + ".".join(["key"] * 1000) + "=1"
HUGE = "field:o.n=" + "9" * 5000


@pytest.mark.parametrize(
    ("term", "problem"),
    [
        (DEEP[:1900], "at most 64 keys and indexes deep"),
        (DEEPER, "a field: term is at most 4000 characters"),
        (HUGE[:111], "a number is at most 100 digits"),
        ("field:o.n=-" + "1" * 101, "a number is at most 100 digits"),
        ("field:o.n=" + "1" * 101 + "abc", "a number is at most 100 digits"),
        ("field:o.n=" + "x" * 1001, "a value is at most 1000 characters"),
        ('field:o.n="' + "\\\\" * 1001 + '"', "a value is at most 1000 characters"),
        (HUGE, "a field: term is at most 4000 characters"),
    ],
)
def test_a_term_past_the_filter_limits_is_refused_naming_the_limit(term: str, problem: str) -> None:
    with pytest.raises(FilterParseError, match=problem):
        parse_field_term(term)
    assert re.fullmatch(TERM_PATTERN, term) is None or len(term) > filter_limits.MAX_TERM


@pytest.mark.parametrize(
    ("term", "match"),
    [
        ("field:o." + ".".join(["k"] * 64) + "=1", FieldMatch("o", ("k",) * 64, 1)),
        ("field:o.n=" + "9" * 100, FieldMatch("o", ("n",), int("9" * 100))),
        ('field:o.n="' + "9" * 101 + '"', FieldMatch("o", ("n",), "9" * 101)),
        ("field:o.n=1." + "5" * 200, FieldMatch("o", ("n",), float("1." + "5" * 200))),
        ("field:o.n=" + "x" * 1000, FieldMatch("o", ("n",), "x" * 1000)),
        ('field:o.n="' + '\\"' * 1000 + '"', FieldMatch("o", ("n",), '"' * 1000)),
    ],
)
def test_a_term_at_the_filter_limits_parses(term: str, match: FieldMatch) -> None:
    assert parse_field_term(term) == match
    assert re.fullmatch(TERM_PATTERN, term) is not None


def test_a_search_past_the_filter_limits_is_refused() -> None:
    with pytest.raises(FilterParseError, match="at most 20 field: terms"):
        split_terms(" ".join(f"field:o.n={n}" for n in range(21)))
    with pytest.raises(FilterParseError, match="at most 20 field: terms"):
        parse_terms([f"field:o.n={n}" for n in range(21)])
    with pytest.raises(FilterParseError, match="a search is at most 8000 characters"):
        split_terms("x" * 8001)
    assert len(split_terms(" ".join(f"field:o.n={n}" for n in range(20)))[0]) == 20
