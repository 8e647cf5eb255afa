"""Choices the command line lists in its help, kept free of torch so that ``polyglot --help`` starts fast."""

LOSS_NAMES: tuple[str, ...] = ("m3l", "patr", "vse", "infonce")
SPACES: tuple[str, ...] = ("raw", "l2", "center-l2")
