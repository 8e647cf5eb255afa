"""The trained student text encoder: multilingual-e5-small's first layers, fine-tuned end to end into the frozen
image space with image–caption, translation-distillation, concept and language-keeping terms."""
