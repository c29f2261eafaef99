"""A sibling module the scripts import (the zoo's scripts import theirs from their own folder)."""
DATASET_PATH = 'dataset.txt'
DEFAULT_RKNN_PATH = '../model/model.rknn'
