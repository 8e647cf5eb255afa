"""The trained student text encoder (multilingual-e5-small's layers + a head into the image space)."""

from indexer.asset_paths import SHIPPED_STUDENT
from indexer.student.model import KIND, TEXT_ENCODER, is_student_folder, load_trunk

__all__ = ["KIND", "SHIPPED_STUDENT", "TEXT_ENCODER", "is_student_folder", "load_trunk"]
