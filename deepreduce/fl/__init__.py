"""Federated mode: FedAvg with two-way compression (DeepReduce's Algorithm 2), the paper's
LSTM layout and a MobileNet-style CNN, and its federated tables (docs/federated.md)."""
