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

import inspect
import logging
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import anyio.to_thread
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
    """The `ask` step decided not to ask (nothing to lose, or the policy settled it)."""

    go_ahead: bool


@dataclass(frozen=True, slots=True)
class _Unasked:
    """The policy decided before describing: no question (`never`, or `auto` and a client that
    cannot be asked), so what would be lost is not worked out at all."""


def _gated(describe: Callable[..., Any], confirm: Confirm) -> Callable[..., Any]:
    """`describe` as a resolver that runs only when its answer can matter: a tree is not walked
    for a question that will not be asked. Same parameters (the tool's arguments by name, the
    `Context` if it takes one), plus the `Context` for the policy."""
    signature = inspect.signature(describe)
    hints = typing.get_type_hints(describe, include_extras=True)
    wants_context = next((n for n in signature.parameters if _is_context(hints.get(n))), None)
    context_name = wants_context or "confirm_context"

    async def gated(**arguments: Any) -> str | _Unasked | None:
        ctx = arguments[context_name] if wants_context else arguments.pop(context_name)
        if confirm.policy == "never" or (confirm.policy == "auto" and not can_be_asked(ctx)):
            if confirm.policy == "auto":
                logger.info("%s: the client cannot be asked; going ahead (--confirm auto)", confirm.tool)
            return _Unasked()
        if inspect.iscoroutinefunction(describe):
            described: str | None = await describe(**arguments)
        else:
            described = await anyio.to_thread.run_sync(lambda: describe(**arguments))
        return described

    parameters = [
        p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()
    ]
    if not wants_context:
        parameters.append(inspect.Parameter(context_name, inspect.Parameter.KEYWORD_ONLY, annotation=Context))
    gated.__signature__ = signature.replace(parameters=parameters, return_annotation=str | _Unasked | None)  # type: ignore[attr-defined]
    gated.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": str | _Unasked | None}
    gated.__qualname__ = f"{getattr(describe, '__qualname__', 'describe')}.gated"
    gated.__module__ = getattr(describe, "__module__", __name__)
    return gated


def _is_context(annotation: Any) -> bool:
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    candidates = typing.get_args(annotation) if typing.get_origin(annotation) is not None else (annotation,)
    return any(isinstance(c, type) and issubclass(c, Context) for c in candidates)


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

        async def ask(
            ctx: Context[Any, Any], loss: str | _Unasked | None
        ) -> Elicit[Confirmation] | _NoQuestion:
            if loss is None or isinstance(loss, _Unasked):
                return _NoQuestion(go_ahead=True)
            if not can_be_asked(ctx):
                raise AccessDenied(confirm.cannot_ask(loss))  # only `destructive` gets here
            return Elicit(confirm.question(loss), Confirmation)

        async def consent(
            loss: str | _Unasked | None, answer: ElicitationResult[Confirmation] | Any
        ) -> Consent:
            tool = confirm.tool
            shown = None if isinstance(loss, _Unasked) else loss
            if isinstance(answer, AcceptedElicitation):
                data = answer.data
                if isinstance(data, _NoQuestion):
                    return Consent(tool, data.go_ahead, shown)
                ticked = isinstance(data, Confirmation) and data.confirm
                return Consent(tool, ticked, shown, asked=True, answer="accept" if ticked else "unticked")
            action: Answer = "cancel" if getattr(answer, "action", "") == "cancel" else "decline"
            return Consent(tool, False, shown, asked=True, answer=action)

        # The SDK reads a resolver's dependencies from its annotations: set them as objects
        # (this module's annotations are strings, which could not name `describe`).
        described = Annotated[str | _Unasked | None, Resolve(_gated(describe, self))]
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
