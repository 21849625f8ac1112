"""The bounds this agent enforces, handed to it by the host: `FORKBOX_BOUNDS` (JSON) in the template's
environment, written by the daemon from src/domain/limits.ts (AGENT_BOUNDS, agentBoundsEnv). The agent
keeps no number of its own for anything the host bounds too, so the two can never disagree (a code run
cut at 2 MiB while the host allowed 64). Read once, at the agent's first import of this module, and taken
out of the environment so no command sees it; forks inherit the values with the agent's memory."""

import json
import os

KEYS = ("frame_header_bytes", "frame_body_bytes", "default_output_bytes", "output_bytes", "tail_bytes",
        "spool_bytes", "tty_side", "relay_connections")


def parse(raw):
    """The bounds from their JSON text; ValueError naming what is wrong."""
    if raw is None:
        raise ValueError("FORKBOX_BOUNDS is not set: the forkbox daemon sets it when it starts the agent")
    try:
        v = json.loads(raw)
    except ValueError as e:
        raise ValueError("FORKBOX_BOUNDS is not JSON: %s" % e) from None
    if not isinstance(v, dict):
        raise ValueError("FORKBOX_BOUNDS is not a JSON object")
    bad = [k for k in KEYS if type(v.get(k)) is not int or v[k] < 1]
    if bad:
        raise ValueError("FORKBOX_BOUNDS lacks positive integers for: %s" % ", ".join(bad))
    return {k: v[k] for k in KEYS}


try:
    _B = parse(os.environ.pop("FORKBOX_BOUNDS", None))
except ValueError as e:
    raise SystemExit("forkbox agent: %s" % e) from None

FRAME_HEADER_BYTES = _B["frame_header_bytes"]
FRAME_BODY_BYTES = _B["frame_body_bytes"]
DEFAULT_OUTPUT_BYTES = _B["default_output_bytes"]
OUTPUT_BYTES = _B["output_bytes"]
TAIL_BYTES = _B["tail_bytes"]
SPOOL_BYTES = _B["spool_bytes"]
TTY_SIDE = _B["tty_side"]
RELAY_CONNECTIONS = _B["relay_connections"]


def as_dict():
    """Every bound, for the `stats` op (the host's test that the two agree asks for them)."""
    return dict(_B)
