"""Early stopping on a held-out score: keep the best epoch's weights, stop after ``patience`` epochs without gain."""

from __future__ import annotations

import copy

from torch import nn
from tqdm import tqdm


class BestEpoch:
    def __init__(self, model: nn.Module, patience: int, what: str = "dev") -> None:
        self.patience, self.what = patience, what
        self.score, self.epoch = -float("inf"), 0
        self.state = copy.deepcopy(model.state_dict())

    def update(self, model: nn.Module, epoch: int, score: float) -> bool:
        """Records the epoch's score; True when training should stop."""
        if score > self.score:
            self.score, self.epoch, self.state = score, epoch, copy.deepcopy(model.state_dict())
            return False
        if epoch - self.epoch >= self.patience:
            tqdm.write(f"early stop: no {self.what} improvement for {self.patience} epochs (best epoch {self.epoch})")
            return True
        return False

    def restore(self, model: nn.Module) -> None:
        model.load_state_dict(self.state)
        model.eval()
