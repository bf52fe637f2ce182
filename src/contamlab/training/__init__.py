"""Simulating contamination: LightningModule, DataModule, training mixes and the stage runner."""
