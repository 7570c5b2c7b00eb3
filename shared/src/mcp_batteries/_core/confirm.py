"""Confirmation before destruction: a tool asks its user before it destroys what cannot be recovered.

A tool is registered with `confirm=describe` and declares a parameter `consent: Consent`
(`BatteriesServer.tool` makes it `Annotated[Consent, Confirm(describe)]`). `describe` is an SDK
resolver (it takes the tool's arguments by name and may take the `Context`) that says, in words
the user reads, exactly what the call would destroy ("delete the directory /srv/a and the 3 files
in it, 12.4 KiB: a.txt (10 KiB), ..."), or None when it would destroy nothing. The SDK's own
`Resolve`/`Elicit` machinery then asks, in the client's era:

- 2026-07-28: the call answers an `InputRequiredResult` holding the question; the client retries
  with the answer and the sealed `requestState` (`_core/request_state`: a retry whose state was
  altered is refused, and an answer counts only for the exact question it answered, so if what
  would be lost changed between the rounds, the user is asked again);
- handshake era: an `elicitation/create` request in the middle of the call.

Whether to ask is the operator's policy (`--confirm`, per tool `--confirm-tools TOOL=POLICY`):
`auto` asks a client that declared elicitation and lets any other act as before; `destructive`
asks, and refuses the call (naming the flag) when the client cannot be asked; `never` never asks.
The tool's body then gets a `Consent`: `go_ahead`, or `refusal` to answer with (nothing was done).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, Elicit, Resolve
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

from mcp_batteries._core.settings import ConfirmPolicy
from mcp_batteries.errors import AccessDenied

__all__ = ["Confirm", "Confirmation", "Consent", "can_be_asked"]

logger = logging.getLogger(__name__)

Answer = Literal["accept", "unticked", "decline", "cancel"]


class Confirmation(BaseModel):
    """The form the user answers: one box to tick (an accept with it unticked changes nothing)."""

    confirm: bool = Field(
        default=False,
        title="Yes, go ahead",
        description="Tick to let the tool go ahead; what it would destroy cannot be recovered.",
    )


@dataclass(frozen=True, slots=True)
class Consent:
    """What the tool's body gets: whether to go ahead, and what to answer when not."""

    tool: str
    go_ahead: bool
    #: What the call would destroy (None: nothing, so no question was needed).
    loss: str | None
    #: Whether the user was asked, and what they answered.
    asked: bool = False
    answer: Answer | None = None

    @property
    def refusal(self) -> str:
        """The tool's answer when the user said no: nothing was done, and why."""
        why = {
            "decline": "the user declined",
            "cancel": "the user cancelled the question",
            "unticked": "the user answered without ticking the confirmation",
        }.get(self.answer or "", "it was not confirmed")
        summary = (self.loss or "").split("\n", 1)[0]
        return f"Nothing was changed: {why}. {self.tool} would have done this: {summary}"


@dataclass(frozen=True, slots=True)
class _NoQuestion:
    """The `ask` step decided not to ask (nothing to lose, policy `never`, or `auto` without a way)."""

    go_ahead: bool


def can_be_asked(ctx: Context[Any, Any]) -> bool:
    """Whether this request's client can answer a form elicitation now.

    2026-07-28: it declared `elicitation` (form, or bare) in the request's capabilities. Handshake
    era: it declared it at `initialize`, and the connection can carry a request to it (stateless
    HTTP cannot).
    """
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None or (elicitation.form is None and elicitation.url is not None):
        return False
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return True
    return bool(ctx.session.can_send_request)


class Confirm(Resolve):
    """`Annotated[Consent, Confirm(describe, tool, policy)]`: ask before `tool` destroys what
    `describe` names (`BatteriesServer.tool` builds it at registration)."""

    def __init__(self, describe: Callable[..., Any], tool: str, policy: ConfirmPolicy) -> None:
        self.describe = describe
        self.tool = tool
        self.policy = policy
        confirm = self

        async def ask(ctx: Context[Any, Any], loss: str | None) -> Elicit[Confirmation] | _NoQuestion:
            if loss is None:
                return _NoQuestion(go_ahead=True)
            if confirm.policy == "never":
                return _NoQuestion(go_ahead=True)
            if not can_be_asked(ctx):
                if confirm.policy == "destructive":
                    raise AccessDenied(confirm.cannot_ask(loss))
                logger.info("%s: the client cannot be asked; going ahead (--confirm auto)", confirm.tool)
                return _NoQuestion(go_ahead=True)
            return Elicit(confirm.question(loss), Confirmation)

        async def consent(loss: str | None, answer: ElicitationResult[Confirmation] | Any) -> Consent:
            tool = confirm.tool
            if isinstance(answer, AcceptedElicitation):
                data = answer.data
                if isinstance(data, _NoQuestion):
                    return Consent(tool, data.go_ahead, loss)
                ticked = isinstance(data, Confirmation) and data.confirm
                return Consent(tool, ticked, loss, asked=True, answer="accept" if ticked else "unticked")
            action: Answer = "cancel" if getattr(answer, "action", "") == "cancel" else "decline"
            return Consent(tool, False, loss, asked=True, answer=action)

        # The SDK reads a resolver's dependencies from its annotations: set them as objects
        # (this module's annotations are strings, which could not name `describe`).
        described = Annotated[str | None, Resolve(describe)]
        ask.__annotations__ = {
            "ctx": Context,
            "loss": described,
            "return": Elicit[Confirmation] | _NoQuestion,
        }
        consent.__annotations__ = {
            "loss": described,
            "answer": Annotated[ElicitationResult[Confirmation], Resolve(ask)],
            "return": Consent,
        }
        super().__init__(consent)

    def question(self, loss: str) -> str:
        return f"{self.tool} would {loss}\n\nThis cannot be undone. Go ahead?"

    def cannot_ask(self, loss: str) -> str:
        summary = loss.split("\n", 1)[0]
        return (
            f"{self.tool} would {summary}, and this server asks the user before destroying "
            f"(--confirm destructive, or --confirm-tools {self.tool}=destructive), "
            "but this client cannot be asked (it did not declare the elicitation capability, or "
            "its connection cannot carry a question). Nothing was changed. Use a client that "
            f"supports elicitation, or have the operator set --confirm-tools {self.tool}=auto "
            "(ask when possible) or =never."
        )


def consent_parameter(fn: Callable[..., Any]) -> str:
    """The name of `fn`'s one parameter annotated `Consent` (the annotation may be a string)."""
    names: list[str] = [
        str(name)
        for name, annotation in getattr(fn, "__annotations__", {}).items()
        if name != "return" and annotation in (Consent, "Consent")
    ]
    if len(names) != 1:
        raise TypeError(
            f"{getattr(fn, '__name__', fn)!r} is registered with confirm=, so it must take exactly one "
            f"parameter annotated Consent (found {len(names)})"
        )
    return names[0]
