"""The embedded demo: procedural bird images in the exact CUB-200-2011 and NABirds layouts.

``birds`` draws a bird whose look follows the taxonomy; ``layouts`` renders every image of a
dataset and writes the release's files. Equal arguments give byte-identical folders.
"""

from hierbench.demo.birds import BirdLook, class_look
from hierbench.demo.folders import (
    check_taxonomy,
    nabirds_image_id,
    select_demo_classes,
    write_cub_demo,
    write_nabirds_demo,
    write_table_demo,
)

__all__ = [
    "BirdLook",
    "check_taxonomy",
    "class_look",
    "nabirds_image_id",
    "select_demo_classes",
    "write_cub_demo",
    "write_nabirds_demo",
    "write_table_demo",
]
