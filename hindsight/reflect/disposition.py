"""The bank's identity as a system message: name, background and the disposition put into words."""

from __future__ import annotations

from hindsight.models import BankProfile, Disposition

# Levels 1..5 of each trait, as the paper's CARA verbalizes them (1 = low, 5 = high).
_SKEPTICISM = (
    "very trusting: you take claims at face value",
    "generally trusting",
    "balanced between trust and doubt",
    "skeptical: you question claims and want evidence",
    "highly skeptical: you doubt claims until they are well supported",
)
_LITERALISM = (
    "interpret language very flexibly, reading between the lines",
    "interpret language flexibly",
    "balance literal and flexible readings",
    "interpret language literally",
    "interpret language very literally, exactly as stated",
)
_EMPATHY = (
    "detached: you focus on facts, not feelings",
    "somewhat reserved about feelings",
    "moderately empathetic",
    "empathetic: you weigh how people feel",
    "highly empathetic: people's feelings matter a great deal to you",
)


def describe_disposition(disposition: Disposition) -> str:
    """One sentence naming the three traits, e.g. "You are generally trusting, interpret language flexibly, ..."."""
    d = disposition
    return (f"You are {_SKEPTICISM[d.skepticism - 1]}; you {_LITERALISM[d.literalism - 1]}; "
            f"and you are {_EMPATHY[d.empathy - 1]}.")


def strength_instruction(bias: float) -> str:
    """How strongly the traits may shape answers and opinions: beta in [0, 1]."""
    if bias < 0.1:
        return "Do not let these traits change your conclusions; they may only color your tone."
    if bias < 0.4:
        return "Let these traits lightly shape your judgments; the evidence comes first."
    if bias < 0.7:
        return "Let these traits clearly shape your judgments and how confident you are."
    return "Let these traits strongly shape your judgments, opinions and how confident you are."


def system_message(profile: BankProfile) -> str:
    """The identity part of every reflect prompt."""
    name = profile.name.strip() or "an AI assistant with a long-term memory"
    parts = [f"You are {name}."]
    if profile.background.strip():
        parts.append(f"About you: {profile.background.strip()}")
    parts.append(describe_disposition(profile.disposition))
    parts.append(strength_instruction(profile.disposition.bias))
    return " ".join(parts)
