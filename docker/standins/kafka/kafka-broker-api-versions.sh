#!/bin/sh
# The distribution's script of the same name: Kafka's BrokerApiVersionsCommand (kafka-tools).
exec java -Xmx128m -cp '/opt/kafka/libs/*' org.apache.kafka.tools.BrokerApiVersionsCommand "$@"
