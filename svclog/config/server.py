"""`server` block: listen addresses, timeouts, logging, and our HTTP body caps."""
# The field helpers (duration, size, section, free, ...) return dataclasses.field(...).
# ruff: noqa: RUF009

from dataclasses import dataclass

from .fields import choice, duration, free, size


@dataclass(frozen=True)
class ServerConfig:
    http_listen_network: str = "tcp"
    # Embedded default binds loopback only; set 0.0.0.0 to serve a network.
    http_listen_address: str = "127.0.0.1"
    http_listen_port: int = 3100
    http_listen_conn_limit: int = 0
    grpc_listen_network: str = "tcp"
    grpc_listen_address: str = ""
    grpc_listen_port: int = 9095
    grpc_listen_conn_limit: int = 0
    tls_cipher_suites: str = ""
    tls_min_version: str = ""
    http_tls_config: dict = free()
    grpc_tls_config: dict = free()
    register_instrumentation: bool = True
    report_grpc_codes_in_instrumentation_label_enabled: bool = False
    graceful_shutdown_timeout: int = duration("30s")
    http_server_read_timeout: int = duration("30s")
    http_server_read_header_timeout: int = duration("0s")
    http_server_write_timeout: int = duration("30s")
    http_server_idle_timeout: int = duration("120s")
    http_log_closed_connections_without_response_enabled: bool = False
    grpc_server_max_recv_msg_size: int = size(4194304)
    grpc_server_max_send_msg_size: int = size(4194304)
    grpc_server_max_concurrent_streams: int = 100
    grpc_server_max_connection_idle: int = duration("0s")
    grpc_server_max_connection_age: int = duration("0s")
    grpc_server_max_connection_age_grace: int = duration("0s")
    grpc_server_keepalive_time: int = duration("2h")
    grpc_server_keepalive_timeout: int = duration("20s")
    grpc_server_min_time_between_pings: int = duration("10s")
    grpc_server_ping_without_stream_allowed: bool = True
    log_format: str = choice("logfmt", "json")
    log_level: str = choice("info", "debug", "warn", "error")
    log_source_ips_enabled: bool = False
    log_source_ips_header: str = ""
    log_source_ips_regex: str = ""
    log_request_headers: bool = False
    log_request_at_info_level_enabled: bool = False
    log_request_exclude_headers_list: str = ""
    http_path_prefix: str = ""
    # svclog extensions: hard caps applied before any decoding.
    max_request_body_bytes: int = size("64MiB")
    max_decompressed_body_bytes: int = size("256MiB")
