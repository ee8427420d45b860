"""The 3-broker test cluster (`sluice.testkit.KafkaClusterMain`: KRaft nodes in JVMs of their own,
replication factor 3, `min.insync.replicas=2`) driven from Python, for the chaos run's broker
faults. It speaks the embedded broker's protocol, so the topic and record commands are
`EmbeddedKafka`'s (over the PLAINTEXT listener, as a super user); the node and placement commands
are its own."""

from __future__ import annotations

import json

from sluice.testing import EmbeddedKafka, KafkaBrokerError

NODES = (1, 2, 3)


class KafkaCluster(EmbeddedKafka):
    """One cluster per chaos run: its start costs four JVMs (10-35 s on a 2-core machine)."""

    _main_class = "sluice.testkit.KafkaClusterMain"

    def __init__(self) -> None:
        super().__init__(
            heap="128m",
            # keytool runs in the cluster's JVM (sluice.testkit.Certificates), whose class Java 17
            # does not export
            jvm_options=(
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "--add-exports=java.base/sun.security.tools.keytool=ALL-UNNAMED",
            ),
            start_timeout=180.0,
            command_timeout=180.0,
        )

    def leader(self, topic: str, partition: int) -> int | None:
        """The node leading the partition now, if any."""
        answer = self._command("leader", topic, str(partition))
        return None if answer == "none" else int(answer)

    def leaders(self, topic: str) -> dict[int, int | None]:
        """Each partition's leader (None while it has none)."""
        found: dict[int, int | None] = {}
        for item in self._command("placement", topic).split():
            partition, rest = item.split("=", 1)
            leader = rest.split(":", 1)[0]
            found[int(partition.removeprefix("p"))] = None if leader == "none" else int(leader)
        return found

    def replicas(self, topic: str, partition: int) -> list[int]:
        """The partition's replicas, the preferred leader first."""
        for item in self._command("placement", topic).split():
            name, rest = item.split("=", 1)
            if name == f"p{partition}":
                return [int(n) for n in rest.split(":", 1)[1].split(",")]
        raise ValueError(f"{topic} has no partition {partition}")

    def kill_node(self, node: int) -> None:
        """SIGKILL: the node hands no leadership over."""
        self._command("kill-node", str(node))

    def stop_node(self, node: int) -> None:
        """A clean stop (controlled shutdown: its leaderships move first)."""
        self._command("stop-node", str(node))

    def start_nodes(self, *nodes: int) -> None:
        """Starts nodes killed or stopped before, side by side (they keep their data); returns once
        each has joined (after the whole cluster was down, none joins before a quorum runs)."""
        try:
            self._command("start-node", ",".join(map(str, nodes)))
        except KafkaBrokerError as e:
            # why a node exited is in its log, which the cluster's stderr carries
            raise KafkaBrokerError(f"{e}{self._stderr_text()}") from e

    def reassign(self, topic: str, partition: int, replicas: list[int]) -> int:
        """Moves the partition to those nodes (the first leads); returns once they are in sync."""
        return int(self._command("reassign", topic, str(partition), ",".join(map(str, replicas))))

    def elect_leaders(self, topics: list[str]) -> None:
        """Every partition led by its preferred replica again."""
        self._command("elect-leaders", ",".join(topics))

    def await_in_sync(self) -> None:
        """Until every replica of every topic is in sync."""
        self._command("await-in-sync")

    def security(self) -> dict:
        """The secured listeners, trust stores and each user's SCRAM password and key store (the
        cluster makes them at start)."""
        return json.loads(self._command("security"))

    def grant(self, user: str, topic: str, operations: list[str]) -> None:
        """An ACL allowing the user those operations on the topic."""
        self._command("grant", user, topic, ",".join(operations))

    def sasl_ssl_bootstrap(self) -> str:
        return self.security()["saslSsl"]

    def ssl_bootstrap(self) -> str:
        """The listeners that require a client certificate (mutual TLS)."""
        return self.security()["ssl"]

    def mtls_properties(self, user: str) -> dict[str, str]:
        """Consumer properties reading as `user` over the SSL listener with the user's client
        certificate (`CN=<user>`, mapped to the principal `user`), the server's certificate and host
        name verified against the cluster's trust store."""
        found = self.security()
        keystore = found["users"][user]
        return {
            "security.protocol": "SSL",
            "ssl.keystore.location": keystore["keystore"],
            "ssl.keystore.password": keystore["keystorePassword"],
            "ssl.key.password": keystore["keystorePassword"],
            "ssl.keystore.type": "PKCS12",
            "ssl.truststore.location": found["truststore"]["path"],
            "ssl.truststore.password": found["truststore"]["password"],
            "ssl.truststore.type": "PKCS12",
        }

    def secrets(self) -> list[str]:
        """Every password the cluster made: its users' SCRAM and key store ones and the trust
        store's (a driver's log must show none)."""
        found = self.security()
        users = found["users"].values()
        return sorted(
            {u["scramPassword"] for u in users}
            | {u["keystorePassword"] for u in users}
            | {found["truststore"]["password"], found["untrustedTruststore"]["password"]}
        )

    def scram_properties(self, user: str) -> dict[str, str]:
        """Consumer properties reading as `user` over the SASL_SSL listener (SCRAM-SHA-512, the
        server's certificate and host name verified against the cluster's trust store)."""
        found = self.security()
        password = found["users"][user]["scramPassword"]
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{password}";',
            "ssl.truststore.location": found["truststore"]["path"],
            "ssl.truststore.password": found["truststore"]["password"],
            "ssl.truststore.type": "PKCS12",
        }
