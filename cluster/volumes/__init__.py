"""Volumes: the claims, volumes and classes kube-scheduler's volume plugins read, and
what a pod's volumes ask of a node once resolved against them."""
