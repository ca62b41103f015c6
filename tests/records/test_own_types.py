"""Classes that store themselves (``to_dict``/``from_dict``) in the codec, agent-framework's chat
types among them: registered by the user, or found in agent-framework as the program loaded it.

These import the internal codec: its tags and errors are what the store holds and reports.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
from agent_framework import AgentResponse, Content, Message

from wfctl._errors import CheckpointCorruptError, UnencodableValueError, UnregisteredTypeError
from wfctl._readable import readable
from wfctl._records._codec import decode, digest, encode, register_type


class Ticket:
    """A class of the user's own that stores itself as a dict."""

    def __init__(self, title: str, opened: datetime) -> None:
        self.title = title
        self.opened = opened

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "opened": self.opened}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Ticket:
        return cls(data["title"], data["opened"])


register_type(Ticket, "tests.Ticket")


class Broken:
    def __init__(self, gives: Any) -> None:
        self.gives = gives

    def to_dict(self) -> Any:
        if isinstance(self.gives, Exception):
            raise self.gives
        return self.gives

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Broken:
        raise ValueError("never rebuilt")


register_type(Broken, "tests.Broken")


def _round_trip(value: Any) -> Any:
    return decode(json.loads(json.dumps(encode(value))))


def test_a_registered_class_stores_its_to_dict_and_is_rebuilt_by_from_dict() -> None:
    opened = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    encoded = encode({"t": Ticket("leak", opened)})
    assert encoded == {
        "t": {
            "$t": "object",
            "n": "tests.Ticket",
            "v": {"title": "leak", "opened": {"$t": "datetime", "v": opened.isoformat()}},
        }
    }
    back = _round_trip(Ticket("leak", opened))
    assert type(back) is Ticket and (back.title, back.opened) == ("leak", opened)
    assert readable(encoded) == {"t": {"title": "leak", "opened": opened.isoformat()}}


def test_what_to_dict_cannot_give_is_refused_where_it_is() -> None:
    with pytest.raises(UnencodableValueError, match=r"to_dict raised RuntimeError\) at \$\.a\[0\]"):
        encode({"a": [Broken(RuntimeError("no"))]})
    with pytest.raises(UnencodableValueError, match=r"to_dict gave list\) at \$\[1\]"):
        encode([1, Broken([1])])
    with pytest.raises(UnencodableValueError, match=r"type object at \$\.gives"):
        encode(Broken({"gives": object()}))
    with pytest.raises(TypeError, match="to_dict and from_dict"):
        register_type(type("Plain", (), {"to_dict": lambda self: {}}))


def test_data_from_dict_refuses_is_corrupt_and_an_unknown_name_is_unregistered() -> None:
    with pytest.raises(CheckpointCorruptError, match="bad object value: ValueError: never rebuilt"):
        decode({"$t": "object", "n": "tests.Broken", "v": {}})
    with pytest.raises(CheckpointCorruptError, match="expected dict, got list"):
        decode({"$t": "object", "n": "tests.Ticket", "v": []})
    for name in ("tests.Nowhere", "os.system", "agent_framework.BaseAgent"):
        with pytest.raises(UnregisteredTypeError, match="is not registered in this process"):
            decode({"$t": "object", "n": name, "v": {}})


def _conversation() -> list[Message]:
    return [
        Message("user", ["hello", Content.from_data(data=b"\x00\x01", media_type="image/png")]),
        Message(
            "assistant",
            [
                Content.from_function_call(call_id="c1", name="look", arguments={"q": "x"}),
                Content.from_function_result(call_id="c1", result={"found": [1, 2]}),
                Content.from_usage(usage_details={"input_token_count": 3}),
            ],
            author_name="bot",
            message_id="m1",
        ),
    ]


def test_agent_framework_s_messages_and_responses_round_trip_by_their_own_data() -> None:
    conversation = _conversation()
    encoded = encode(conversation)
    assert [item["n"] for item in encoded] == ["agent_framework.Message"] * 2
    assert encoded[0]["v"] == conversation[0].to_dict()
    back = _round_trip(conversation)
    assert [type(m) for m in back] == [Message, Message]
    assert [m.to_dict() for m in back] == [m.to_dict() for m in conversation]
    assert back[1].contents[0].arguments == {"q": "x"}
    # the same conversation made again digests alike: a step given it is served from its record
    assert digest((conversation,), {}) == digest((_conversation(),), {})

    response = AgentResponse(messages=conversation, response_id="r1")
    again = _round_trip(response)
    assert type(again) is AgentResponse and again.to_dict() == response.to_dict()
    content = _round_trip(Content.from_text(text="one"))
    assert type(content) is Content and content.text == "one"


#: Decodes a stored Message in a fresh process, with or without agent-framework loaded first.
_FRESH = (
    "import json, sys\n"
    "if sys.argv[2] == 'load': import agent_framework\n"
    "from wfctl._errors import UnregisteredTypeError\n"
    "from wfctl._records._codec import decode\n"
    "try:\n"
    "    print(type(decode(json.loads(sys.argv[1]))[0]).__name__)\n"
    "except UnregisteredTypeError as exc:\n"
    "    print(exc)\n"
    "print('agent_framework' in sys.modules)\n"
)


def _fresh(encoded: Any, load: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _FRESH, json.dumps(encoded), load],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def test_a_fresh_process_rebuilds_a_message_only_if_it_loaded_agent_framework() -> None:
    encoded = encode([Message("user", ["hi"])])
    assert _fresh(encoded, "load") == ["Message", "True"]  # never encoded one there: found
    assert _fresh(encoded, "no") == [
        "checkpoint: the class 'agent_framework.Message' is not registered in this process: "
        "it is agent-framework's, and agent-framework is not loaded here (wfctl imports "
        "nothing a store names); import agent_framework in the code that reads it",
        "False",  # the store's name imported nothing
    ]
