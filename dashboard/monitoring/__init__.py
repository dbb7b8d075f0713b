"""Monitoring app: the domain models and the pages that browse them."""
