"""Sends the spans of a producer script over OTLP/HTTP too (protobuf, the OpenTelemetry
Python SDK's own `OTLPSpanExporter` behind a `BatchSpanProcessor`), to a `runlog collect`
receiver: small batches (4 spans) sent as they end, so that a trace's spans arrive in
several requests, children before their parents, as from a busy exporter.

`add(provider, url, gzip)` adds the exporter when `url` is given; `finish()` flushes it and
fails when any export was not acknowledged."""

_state = {"provider": None, "sent": 0, "failed": 0}


def add(provider, url, gzip=False):
    if not url:
        return
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

    class CountingExporter(OTLPSpanExporter):
        def export(self, spans):
            result = super().export(spans)
            key = "sent" if result == SpanExportResult.SUCCESS else "failed"
            _state[key] += len(spans)
            return result

    exporter = CountingExporter(
        endpoint=url.rstrip("/") + "/v1/traces",
        compression=Compression.Gzip if gzip else Compression.NoCompression,
        timeout=30,
    )
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_export_batch_size=4, schedule_delay_millis=50)
    )
    _state["provider"] = provider


def finish():
    provider = _state["provider"]
    if provider is None:
        return
    provider.force_flush()
    provider.shutdown()
    if _state["failed"]:
        raise SystemExit(f"OTLP/HTTP: {_state['failed']} spans not acknowledged")
    print(f"OTLP/HTTP: {_state['sent']} spans acknowledged", flush=True)
