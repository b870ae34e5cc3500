"""One line naming the service and the cause, from what ``docker compose up`` really printed.

The outputs are Compose v5.0.2's, against Debian's Docker engine 20.10 (the classic builder: no buildx), captured on
this machine kind: a published port another process held, and a build step that exited non-zero.
"""

from __future__ import annotations

from streamproc_dev.compose_failure import explain, service_of

PORT_TAKEN = """\
 Network tiny_default Creating 
 Network tiny_default Created 
 Container tiny-kafka-1 Creating 
 Container tiny-kafka-1 Created 
 Container tiny-kafka-1 Starting 
Error response from daemon: driver failed programming external connectivity on endpoint tiny-kafka-1 \
(f77b8ebec2b7a195b5b2345de04fae45aa7d21678970d7a804f854badc0461eb): Error starting userland proxy: listen tcp4 \
127.0.0.1:18765: bind: address already in use
 Container tiny-kafka-1 Stopping 
 Container tiny-kafka-1 Stopped 
"""  # noqa: W291 - Compose's own trailing blanks

BUILD_FAILED = """\
Sending build context to Docker daemon     174B
Step 1/3 : FROM streamproc-standin/debian:bookworm
 ---> 579e6ada6647
Step 2/3 : RUN echo about to fail && exit 3
 ---> Running in 026f2c4460c2
about to fail
time="2026-11-29T22:45:51Z" level=warning msg="Docker Compose requires buildx plugin to be installed"
 Image tiny-minio:1 Building 
 Image tiny-minio:1 Building 
The command '/bin/sh -c echo about to fail && exit 3' returned a non-zero code: 3
"""  # noqa: W291


def test_a_taken_port_names_the_service_and_the_port() -> None:
    assert explain(PORT_TAKEN, "tiny") == (
        "kafka: host port 18765 is already in use (published as 127.0.0.1:18765); free it or set another port in .env"
    )


def test_a_failed_build_names_the_service_of_the_image_and_the_step() -> None:
    assert explain(BUILD_FAILED, "tiny", {"tiny-minio:1": "minio"}) == (
        "minio (image tiny-minio:1): the image build failed: `/bin/sh -c echo about to fail && exit 3` exited with 3"
    )


def test_buildkit_names_the_target_itself() -> None:
    output = (
        'target spark-master: failed to solve: process "/bin/sh -c false" did not complete successfully: exit code: 1'
    )
    assert explain(output, "streamproc") == (
        'spark-master: the image build failed: process "/bin/sh -c false" did not complete successfully: exit code: 1'
    )


BASE_IMAGE_MISSING = """\
time="2026-11-29T23:04:17Z" level=warning msg="Docker Compose requires buildx plugin to be installed"
 Image tiny-minio:1 Building 
 Image tiny-minio:1 Building 
Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 10.255.255.53:53: no such host
"""  # noqa: W291


def test_a_base_image_that_is_not_there_names_the_service_and_the_registry_error() -> None:
    assert explain(BASE_IMAGE_MISSING, "tiny", {"tiny-minio:1": "minio"}) == (
        'minio (image tiny-minio:1): the image build failed: Get "https://registry-1.docker.io/v2/": dial tcp: lookup '
        "registry-1.docker.io on 10.255.255.53:53: no such host"
    )


def test_a_failed_one_shot_names_itself() -> None:
    output = (
        ' Container streamproc-test-44225b-airflow-init-1 Error service "airflow-init" didn\'t complete '
        "successfully: exit 1 \n"
    )
    assert explain(output, "streamproc-test-44225b") == (
        "airflow-init: the one-shot exited with 1 before its dependants could start"
    )


def test_an_unknown_failure_is_compose_s_last_error_line() -> None:
    output = " Container x-a-1 Starting \nError response from daemon: something new\n Container x-a-1 Stopped \n"
    assert explain(output, "x") == "Error response from daemon: something new"


def test_container_names_give_the_service() -> None:
    assert service_of("streamproc-spark-worker-2", "streamproc") == "spark-worker"
    assert service_of("deploy-a1b2-airflow-apiserver-1", "deploy-a1b2") == "airflow-apiserver"
