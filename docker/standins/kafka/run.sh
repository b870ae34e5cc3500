#!/bin/sh
# As apache/kafka's image does: every KAFKA_FOO_BAR variable becomes foo.bar in server.properties; the log
# directory is formatted (KRaft, standalone) on the first start only.
set -eu
props=/tmp/server.properties
env | sed -n 's/^KAFKA_\([A-Z0-9_]*\)=\(.*\)$/\1=\2/p' | while IFS='=' read -r name value; do
	printf '%s=%s\n' "$(printf '%s' "$name" | tr 'A-Z_' 'a-z.')" "$value"
done > "$props"
cp=/opt/kafka/libs/*
logdir=${KAFKA_LOG_DIRS:-/var/lib/kafka/data}
if [ ! -f "$logdir/meta.properties" ]; then
	java -cp "$cp" kafka.tools.StorageTool format --config "$props" \
		--cluster-id "${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" --ignore-formatted
fi
exec java -Xmx512m -cp "$cp" kafka.Kafka "$props"
