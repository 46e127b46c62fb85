"""The transaction coordinator's building blocks (Kafka 3.9's ``kafka.coordinator.transaction``).

Modules::

    metadata.py      TransactionState, TransactionMetadata and its prepare/complete transitions
    records.py       the key and value of __transaction_state, their serde and the tools' text
    state_topic.py   __transaction_state's name and the partition of a transactional id
    config.py        TransactionConfig: the values read from the transaction.* keys
    state_manager.py TransactionStateManager: the ids of __transaction_state (load, write, expire)
    coordinator.py   TransactionCoordinator: InitProducerId with a transactional id

Its configuration keys are declared in ``broker/transaction_config_keys.py``
(below ``broker.config``, which builds the one table of broker keys from them).
"""
