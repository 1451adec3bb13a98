"""Frozen features: timm backbones, batched extraction and the feature store."""
