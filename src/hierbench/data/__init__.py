"""Datasets on disk: the CUB and NABirds layouts, dataset kinds, the table reader, shipped
inputs."""
