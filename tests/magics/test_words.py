"""The words both magics' lines are made of (fw_magics.magics.words): the option table, quoting. Pure."""

import pytest
from IPython.core.error import UsageError

from fw_magics.magics.words import (
    PIPE,
    QUOTE_LIMIT,
    Option,
    Refused,
    key_columns,
    key_text,
    option_words,
    quoted,
    read_options,
    shortened,
    tokenize,
    unquote,
    unquoted,
    variable_name,
    whole_number,
)


def colour(text: str) -> str:
    if text == "mauve":
        raise UsageError("--colour 'mauve': not today")
    if text not in ("red", "blue"):
        raise Refused
    return text


TABLE = (
    Option("--colour", "red or blue", colour),
    Option("--count", "a whole number, 1 or more", whole_number("--count", least=1)),
    Option("--name", "a Python variable name", unquoted(variable_name)),
    Option("--loud"),
)


def read(line, pipe=None):
    return read_options(tokenize(line), TABLE, pipe=pipe)


def test_options_stand_anywhere_inline_or_separate_and_the_rest_keeps_its_order():
    found, words = read('a --colour red b key=k,"l m" --count=3 | c --loud --name "x"')
    assert found == {"--colour": "red", "key": ("k", "l m"), "--count": 3, "--loud": True, "--name": "x"}
    assert words == ["a", "b", PIPE, "c"]


def test_what_the_table_says_is_written_back_and_reads_the_same():
    values = [("--colour", "blue"), ("--count", 12), ("--name", None), ("--loud", False)]
    assert option_words(TABLE, values) == ["--colour blue", "--count 12"]
    assert option_words(TABLE, [("--loud", True), ("--count", 0)]) == ["--loud", "--count 0"]
    assert Option("--dir", "a directory", str).words("my jobs/x") == '--dir "my jobs/x"'
    assert tokenize(key_text(("a b", "c", "true", "2")))[0] == 'key="a b",c,"true","2"'
    assert key_columns(key_text(("a b", 'say "hi"', "c")).removeprefix("key=")) == ("a b", 'say "hi"', "c")


@pytest.mark.parametrize("line, says", [
    ("--colour green", "--colour takes red or blue; got 'green'"),
    ("--colour mauve", "--colour 'mauve': not today"),  # a parser's own message
    ("--count 0", "--count takes a whole number, 1 or more; got '0'"),
    ("--count x", "--count takes a whole number, 1 or more; got 'x'"),
    ("--count 1234567890123456789", "--count '1234567890123456789' has 19 digits; accepted: at most 18"),
    ("--name class", "--name takes a Python variable name; got 'class'"),
    ("--colour", "--colour needs a value: red or blue"),
    ("--colour | x", "--colour needs a value: red or blue"),
    ("--loud=yes", "--loud takes no value; got '--loud=yes'"),
    ("--loud --loud", "--loud given twice"),
    ("--colour red --colour=blue", "--colour given twice"),
    ("key=a key=b", "key= given twice"),
    ("--colur red", "unknown option '--colur'; did you mean '--colour'?"),
    ("--zzzzzz", "unknown option '--zzzzzz'; options are: key=COL, --colour, --count, --name, --loud"),
])
def test_each_mistake_is_one_line(line, says):
    with pytest.raises(UsageError) as caught:
        read(line)
    assert str(caught.value) == says


def test_a_pipe_is_a_word_or_refused():
    assert read("a | b")[1] == ["a", PIPE, "b"]
    with pytest.raises(UsageError, match="no pipes here"):
        read("a | b", pipe="no pipes here")


def test_quoting_for_messages_cuts_long_tokens():
    long = "y" * 500
    assert len(quoted(long)) == QUOTE_LIMIT + 2 and quoted(long).endswith("...'")
    assert shortened(long) == long[:QUOTE_LIMIT - 3] + "..." and shortened("short") == "short"
    assert quoted("price") == "'price'"
    assert unquote('"a \\"b\\""') == ('a "b"', True) and unquote("plain") == ("plain", False)
