"""How long, how fast and from which seed a training run goes: the one schedule every family's config shares.

Each family's config (:class:`training.tower.train.TrainConfig`, :class:`training.align.dcca.NoiConfig`,
:class:`training.smalr.train.SmalrConfig`, :class:`training.student.train.StudentRecipe`,
:class:`training.translator.curves.CurveSettings`) *is* a :class:`Schedule` plus its own fields: the schedule is
declared here once, read as ``config.lr`` everywhere, and saved flat in every recipe as before. A family that
counts epochs leaves ``steps`` at its default, one that counts steps ``epochs``, and names the fields it does not
read in ``unused`` (its saved recipe leaves them out); where a family's paper uses other values, its config gives
them as its defaults. The command line's ``train`` families
build their schedule options from these fields (``training/cli/train_cmd.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar


@dataclass(kw_only=True)
class Schedule:
    epochs: int = 30  # passes over the training data (the families that count epochs)
    steps: int = 2000  # optimiser steps (the families that count steps)
    patience: int = 5  # stop after this many evaluations without improvement
    batch_size: int = 128
    lr: float = 1e-3  # (peak) learning rate
    beta1: float = 0.99  # Adam's β1 (the M3L paper's 0.99)
    warmup: int = 0  # steps of linear warm-up to the peak rate
    seed: int = 0

    # The schedule fields a family does not read: left out of the recipe it saves, where they would mislead.
    unused: ClassVar[tuple[str, ...]] = ()

    def recipe(self) -> dict[str, Any]:
        """``asdict`` of the config, less the schedule fields its family does not read."""
        return {key: value for key, value in asdict(self).items() if key not in self.unused}


SCHEDULE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Schedule))
