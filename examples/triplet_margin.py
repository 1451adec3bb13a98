"""A triplet-margin objective that joins the Geometry × Loss factorial as loss T.

Each anchor's distance to every image of its own leaf should be smaller, by a margin, than its
distance to every image of another leaf. The loss reads the batch's distances as the head's
geometry measures them (Euclidean on the unit sphere for E, the Poincaré ball's for H), already
sanitised and clipped, so one function serves both geometries. A bundle stacks its cells'
distances on a leading axis: the loss keeps it and returns one value per cell.

Name it in a config (examples/triplet.yaml):

    factorial: {losses: [R, S, T]}
    plugins: {objectives: {T: examples/triplet_margin.py:OBJECTIVE}}
"""

import torch

from hierbench.losses.registry import PlainObjective

MARGIN = 0.2


def triplet_margin(distances: torch.Tensor, labels: torch.Tensor, spec: object):
    """Mean hinge of d(anchor, positive) − d(anchor, negative) + MARGIN over every (anchor,
    same-leaf positive, other-leaf negative) triple of the batch; (…, B, B) distances, (…, B, 3)
    labels -> (…) losses, and no per-level values for the log."""
    same = labels[..., :, None, 0] == labels[..., None, :, 0]
    itself = torch.eye(same.shape[-1], dtype=torch.bool, device=same.device)
    triples = (same & ~itself)[..., :, :, None] & (~same)[..., :, None, :]
    hinge = torch.relu(distances[..., :, :, None] - distances[..., :, None, :] + MARGIN)
    total = (hinge * triples).sum(dim=(-3, -2, -1))
    return total / triples.sum(dim=(-3, -2, -1)).clamp(min=1), {}


OBJECTIVE = PlainObjective("triplet_margin", triplet_margin)
