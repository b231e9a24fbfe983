"""
A Waypoint run as AG-UI events: the log entries of one run, and the drafts of its model rounds,
turned into the protocol's events (docs/ag-ui.md has the table).

Pure: no Django. The stream (`apps/agui/stream.py`) reads the record and feeds it here; what is
sent is built from the `ag-ui-protocol` package's own event classes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    Interrupt,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UserMessage,
)

from apps.agent import tools as tool_words
from apps.ledger.types import (
    ActionFinished,
    ActionStarted,
    ModelRound,
    Recorded,
    TurnAmbiguous,
    TurnComplete,
    TurnExpired,
    TurnFailed,
    TurnHandedOff,
)

# Run statuses after which a run takes no further step on its own (PRODUCT.md `run_status`).
SETTLED = {"waiting", "completed", "interrupted", "failed", "expired", "handed_off"}
FAILED = {"interrupted", "failed", "expired"}


def interrupt_id(run_id: str, call_id: str) -> str:
    """The AG-UI interrupt id of a pending approval or question: call ids repeat from run to run."""
    return f"{run_id}:{call_id}"


def parse_interrupt_id(value: str) -> tuple[str, str] | None:
    """The (run_id, call_id) an interrupt id names, or None for one Waypoint never gave out."""
    run_id, sep, call_id = value.partition(":")
    return (run_id, call_id) if sep and run_id and call_id else None


def _words(tool: dict[str, Any], name: str, arguments: Any) -> dict[str, str]:
    return {"displayName": tool_words.display_name(tool, name), "summary": tool_words.summary(tool, arguments)}


def response_schema(call: dict[str, Any], tool: dict[str, Any] | None = None) -> dict[str, Any]:
    """
    The JSON Schema of the `payload` that answers a pending approval or question (the output `…/results` takes).

    An approval with editable arguments also takes `edited_arguments`: those fields only, each as
    the tool's parameters describe it.
    """
    if call["kind"] == "approval":
        schema = {
            "type": "object",
            "required": ["decision", "reviewed"],
            "properties": {
                "decision": {"enum": ["approve", "deny"]},
                "reviewed": {
                    "type": "object",
                    "required": ["tool", "arguments"],
                    "properties": {"tool": {"const": call["tool"]}, "arguments": {"const": call["arguments"]}},
                },
            },
        }
        if call.get("editable"):
            params = ((tool or {}).get("parameters") or {}).get("properties") or {}
            schema["properties"]["edited_arguments"] = {
                "type": "object", "additionalProperties": False, "minProperties": 1,
                "properties": {name: params.get(name, {}) for name in call["editable"]},
            }
        return schema
    return {
        "oneOf": [
            {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string", "minLength": 1}}},
            {"type": "object", "required": ["declined"], "properties": {"declined": {"const": True}}},
        ]
    }


def _interrupt_metadata(call: dict[str, Any]) -> dict[str, Any] | None:
    """
    What an interrupt's card says besides its question: a re-attempt may already have gone through;
    an approval the team gives (the customer's front end shows "Waiting for approval from the team"),
    and when it expires.
    """
    said = {}
    if call.get("reattempt_of"):
        said["reattempt_of"] = call["reattempt_of"]
    if call["kind"] == "approval" and call.get("approver") not in (None, "customer"):
        said["approver"] = call["approver"]
    if call["kind"] == "approval" and call.get("expires_at"):
        said["expires_at"] = call["expires_at"]
    return {"waypoint": said} if said else None


def state_snapshot(state: dict[str, Any]) -> StateSnapshotEvent:
    """Waypoint's state of the conversation as the AG-UI agent state."""
    return StateSnapshotEvent(snapshot={
        "conversation_id": state["conversation_id"],
        "run_id": state["run_id"],
        "run_status": state["run_status"],
        "control": state["control"],
        "progress": state["progress"],
        "pending_client_actions": state["pending_client_actions"],
    })


CITATIONS = "waypoint.citations"


def citations(message_id: str, cited: list[dict[str, Any]]) -> list[BaseEvent]:
    """
    A reply's sources (PRODUCT.md "Knowledge"): the protocol's messages have no place for them, so
    they follow as its extension point, `CUSTOM` `waypoint.citations` `{messageId, citations}`.
    """
    return [CustomEvent(name=CITATIONS, value={"messageId": message_id, "citations": cited})] if cited else []


def messages_snapshot(messages: list[dict[str, Any]], client_ids: dict[str, str]) -> MessagesSnapshotEvent:
    """
    The conversation's messages, as its record has them.

    A user message an AG-UI client sent keeps the id the client gave it (`client_ids`, by turn),
    so the client recognises its own message instead of showing it twice.
    """
    out = []
    for message in messages:
        if message["role"] == "user":
            out.append(UserMessage(id=client_ids.get(message["turn_id"]) or message["id"], content=message["text"]))
        elif message["role"] == "staff":
            # A person's reply under handoff: an assistant-side message, under the person's name.
            out.append(AssistantMessage(id=message["id"], content=message["text"], name=message["author"]["name"]))
        else:
            out.append(AssistantMessage(id=message["id"], content=message["text"]))
    return MessagesSnapshotEvent(messages=out)


def text_message(message: dict[str, Any]) -> list[BaseEvent]:
    """A message recorded outside any run (a person's reply while the staff side holds the conversation), whole."""
    name = message["author"]["name"] if message["role"] == "staff" else None
    return [
        TextMessageStartEvent(message_id=message["id"], role="assistant", name=name),
        TextMessageContentEvent(message_id=message["id"], delta=message["text"]),
        TextMessageEndEvent(message_id=message["id"]),
    ]


@dataclass
class RunEvents:
    """
    What one AG-UI stream has said about one Waypoint run, and what it says next.

    Feed it the run's entries in log order (`seen` first for those the client already had, then
    `feed`), and drafts as they come; steps and messages are opened and closed in pairs, so the
    stream always obeys the protocol's order, however late the client joined.
    """

    run_id: str
    tools: dict[str, dict[str, Any]]
    rounds: int = 0
    open_steps: list[str] = field(default_factory=list)
    draft_id: str = ""
    draft_text: str = ""
    drafted: dict[str, str] = field(default_factory=dict)  # text already streamed as a round's draft -> its message id
    action_steps: dict[str, str] = field(default_factory=dict)  # call_id -> the open step's name
    # Calls of rounds the client joined after: a result of one is announced with its call first,
    # since neither this stream nor MESSAGES_SNAPSHOT (text messages only) showed the call.
    unannounced: dict[str, dict[str, Any]] = field(default_factory=dict)

    def seen(self, entries: list[Recorded]) -> None:
        """Learn entries the client was shown before (or needs no events for): nothing is emitted."""
        for entry in entries:
            if isinstance(entry.body, ModelRound) and entry.payload.get("run_id") == self.run_id:
                self.rounds = max(self.rounds, entry.body.round)
                self.unannounced.update({call["call_id"]: call for call in entry.body.calls})
            elif isinstance(entry.body, ActionFinished) and entry.payload.get("run_id") == self.run_id:
                self.unannounced.pop(entry.body.call_id, None)  # its result came before too: nothing to follow up

    def _tool_call(self, call: dict[str, Any], parent: str = "") -> list[BaseEvent]:
        tool = self.tools.get(call["tool"], {})
        return [
            ToolCallStartEvent(tool_call_id=call["call_id"], tool_call_name=call["tool"], parent_message_id=parent or None,
                               metadata={"waypoint": _words(tool, call["tool"], call.get("arguments"))}),
            ToolCallArgsEvent(tool_call_id=call["call_id"], delta=json.dumps(call.get("arguments", {}))),
            ToolCallEndEvent(tool_call_id=call["call_id"]),
        ]

    def feed(self, entry: Recorded) -> list[BaseEvent]:
        if entry.payload.get("run_id") != self.run_id:
            return []
        out: list[BaseEvent] = []
        match entry.body:
            case ModelRound() as e:
                self.rounds = max(self.rounds, e.round)
                step = f"Model round {e.round}"
                if step not in self.open_steps:
                    out.append(self._start_step(step))
                parent = self.draft_id
                out += self._end_draft(e.text)
                out.append(self._finish_step(step))
                for call in e.calls:
                    out += self._tool_call(call, parent)
            case ActionStarted() as e:
                tool = self.tools.get(e.tool, {})
                name = f"{tool_words.summary(tool, e.arguments) or tool_words.display_name(tool, e.tool)} ({e.call_id})"
                if name not in self.open_steps:
                    self.action_steps[e.call_id] = name
                    out.append(self._start_step(name))
            case ActionFinished() as e:
                if (name := self.action_steps.pop(e.call_id, "")) and name in self.open_steps:
                    out.append(self._finish_step(name))
                result = e.output if e.ok else {"error": e.error}
                if (call := self.unannounced.pop(e.call_id, None)) is not None:
                    out += self._tool_call(call)
                out.append(ToolCallResultEvent(message_id=f"{self.run_id}.{e.call_id}.result", tool_call_id=e.call_id,
                                               content=json.dumps(result, sort_keys=True)))
            case TurnComplete(text=text, message_id=message_id) | TurnHandedOff(reply=text, message_id=message_id):
                # A handed-off turn's reply is what the model said as it asked for a person.
                out += self._end_draft("")
                if text and text not in self.drafted:
                    out += [
                        TextMessageStartEvent(message_id=message_id, role="assistant"),
                        TextMessageContentEvent(message_id=message_id, delta=text),
                        TextMessageEndEvent(message_id=message_id),
                    ]
                if isinstance(entry.body, TurnComplete):
                    out += citations(self.drafted.get(text, message_id), entry.body.citations)
            case TurnFailed() | TurnAmbiguous() | TurnExpired():
                out += self._end_draft("")
        return out

    def draft(self, text: str) -> list[BaseEvent]:
        """The text of the model round in progress so far, from a streaming provider."""
        out: list[BaseEvent] = []
        step = f"Model round {self.rounds + 1}"
        if step not in self.open_steps:
            out.append(self._start_step(step))
        if not self.draft_id:
            self.draft_id, self.draft_text = f"{self.run_id}.{self.rounds + 1}", ""
            out.append(TextMessageStartEvent(message_id=self.draft_id, role="assistant"))
        if text.startswith(self.draft_text) and len(text) > len(self.draft_text):
            out.append(TextMessageContentEvent(message_id=self.draft_id, delta=text[len(self.draft_text):]))
            self.draft_text = text
        return out

    def pending_calls(self, state: dict[str, Any]) -> list[BaseEvent]:
        """
        The frontend tool calls the waiting run asks for that this stream has not shown: a client
        that joined after their round (a reload, a dropped connection) must still be able to answer them.
        """
        if state["run_status"] != "waiting" or state["run_id"] != self.run_id:
            return []
        out: list[BaseEvent] = []
        for pending in state["pending_client_actions"]:
            if pending["kind"] == "client_tool" and (call := self.unannounced.pop(pending["call_id"], None)) is not None:
                out += self._tool_call(call)
        return out

    def close(self) -> list[BaseEvent]:
        """End whatever is still open, before the run's last event."""
        out = self._end_draft("")
        while self.open_steps:
            out.append(self._finish_step(self.open_steps[-1]))
        return out

    def _start_step(self, name: str) -> StepStartedEvent:
        self.open_steps.append(name)
        return StepStartedEvent(step_name=name)

    def _finish_step(self, name: str) -> StepFinishedEvent:
        self.open_steps.remove(name)
        return StepFinishedEvent(step_name=name)

    def _end_draft(self, final: str) -> list[BaseEvent]:
        if not self.draft_id:
            return []
        out: list[BaseEvent] = []
        if final.startswith(self.draft_text) and len(final) > len(self.draft_text):
            out.append(TextMessageContentEvent(message_id=self.draft_id, delta=final[len(self.draft_text):]))
            self.draft_text = final
        out.append(TextMessageEndEvent(message_id=self.draft_id))
        self.drafted[self.draft_text] = self.draft_id
        self.draft_id = self.draft_text = ""
        return out


def run_ended(*, thread_id: str, run_id: str, state: dict[str, Any], tools: dict[str, dict[str, Any]]) -> BaseEvent:
    """
    The one event that ends a stream, from the state of the run it followed.

    A paused run ends with an interrupt per approval and question; a run waiting only on client
    tools finishes plainly: the application answers the frontend tool calls the stream showed.
    """
    status = state["run_status"]
    if status in FAILED:
        message = state.get("error") or {
            "interrupted": "The run was interrupted; continue the conversation to go on.",
            "expired": "The run's pending request expired.",
        }.get(status, "The run failed.")
        return RunErrorEvent(message=message, code=f"run_{status}")
    pending = state["pending_client_actions"] if status == "waiting" else []
    asked = [call for call in pending if call["kind"] in ("approval", "question")]
    if asked:
        interrupts = [
            # The request in the words of whoever answers it, as every front end shows it ("Shall I …?").
            Interrupt(id=interrupt_id(state["run_id"], call["call_id"]), reason=call["kind"],
                      message=call["title"], tool_call_id=call["call_id"],
                      response_schema=response_schema(call, tools.get(call["tool"], {})),
                      metadata=_interrupt_metadata(call))
            for call in asked
        ]
        return RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=RunFinishedInterruptOutcome(interrupts=interrupts))
    # A run waiting on client tools ends plainly: the calls are the stream's TOOL_CALLs without a
    # result. No key beyond the protocol's own, which the strict @ag-ui/core CopilotKit bundles refuses.
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id)
