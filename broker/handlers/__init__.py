"""One module per Kafka API; ``registry.py`` lists them once.

Each handler module opens with the API, its key and version range,
"Behaviour:" bullets and "Version notes:" bullets.
"""
