"""A tiny streaming server that makes a GPU work: a random-weight causal language model built on
the spot (no download), served over the OpenAI completions API with SSE streaming.

    python tiny_server.py [--port 0] [--device auto|cuda|cpu] [--layers 4] [--hidden 512]

Prints `listening on http://127.0.0.1:PORT` once it accepts requests. Tokens are bytes (256 ids),
so prompts of any length in tokens are plain text and the server's counts are exact; an answer
is exactly `max_tokens` printable bytes (greedy, never stopping early), one SSE event a token,
then a usage chunk (`stream_options.include_usage`) and `[DONE]`. Requests in flight are decoded
together, one batched forward pass a step, so that concurrency loads the device. For llmload's
GPU kit (`scripts/gpu-kit.sh`); it needs PyTorch and transformers, nothing else.
"""

import argparse
import json
import queue
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch
from transformers import LlamaConfig, LlamaForCausalLM

MODEL = "tiny-random"
PRINTABLE = torch.arange(32, 127)


class Request:
    """One streamed completion: its prompt ids, how many tokens it wants, where its tokens go."""

    def __init__(self, ids, max_tokens):
        self.ids = ids
        self.max_tokens = max_tokens
        self.out = queue.Queue()
        self.made = 0


class Engine:
    """Decodes every request in flight together, one token each per step."""

    def __init__(self, device, layers, hidden):
        config = LlamaConfig(
            vocab_size=256,
            hidden_size=hidden,
            intermediate_size=hidden * 4,
            num_hidden_layers=layers,
            num_attention_heads=max(1, hidden // 64),
            num_key_value_heads=max(1, hidden // 64),
            max_position_embeddings=8192,
        )
        torch.manual_seed(0)
        self.device = device
        self.model = LlamaForCausalLM(config).to(device).eval()
        self.mask = torch.full((256,), float("-inf"), device=device)
        self.mask[PRINTABLE.to(device)] = 0.0
        self.waiting = queue.Queue()
        threading.Thread(target=self.run, daemon=True).start()

    def submit(self, request):
        self.waiting.put(request)

    @torch.no_grad()
    def run(self):
        active = []
        while True:
            if not active:
                active.append(self.waiting.get())
            while not self.waiting.empty():
                active.append(self.waiting.get_nowait())
            # One step: the whole sequences, left-padded, through the model (no cache: the model
            # is small, and the work it costs is the point).
            longest = max(len(r.ids) for r in active)
            batch = torch.zeros((len(active), longest), dtype=torch.long)
            attention = torch.zeros((len(active), longest), dtype=torch.long)
            for row, r in enumerate(active):
                batch[row, longest - len(r.ids):] = torch.tensor(r.ids)
                attention[row, longest - len(r.ids):] = 1
            logits = self.model(
                input_ids=batch.to(self.device), attention_mask=attention.to(self.device)
            ).logits[:, -1, :]
            chosen = torch.argmax(logits + self.mask, dim=-1).tolist()
            still = []
            for r, token in zip(active, chosen):
                r.ids.append(token)
                r.made += 1
                r.out.put(token)
                if r.made < r.max_tokens:
                    still.append(r)
                else:
                    r.out.put(None)
            active = still


def handler(engine):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send_json(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                self.send_json(200, {"status": "ok"})
            elif self.path == "/v1/models":
                self.send_json(200, {"object": "list", "data": [
                    {"id": MODEL, "object": "model", "max_model_len": 8192}]})
            else:
                self.send_json(404, {"error": {"message": "not found"}})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            if length > 16 << 20:
                self.send_json(413, {"error": {"message": "body too large"}})
                return
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self.send_json(400, {"error": {"message": "not JSON"}})
                return
            if self.path != "/v1/completions":
                self.send_json(404, {"error": {"message": "only /v1/completions"}})
                return
            prompt = body.get("prompt", "")
            if isinstance(prompt, list):
                prompt = "".join(p if isinstance(p, str) else "" for p in prompt)
            ids = list(str(prompt).encode("utf-8"))
            max_tokens = int(body.get("max_tokens") or 16)
            if not ids or not 0 < max_tokens <= 4096 or len(ids) + max_tokens > 8192:
                self.send_json(400, {"error": {"message": "prompt or max_tokens out of range"}})
                return
            request = Request(ids, max_tokens)
            prompt_tokens = len(ids)
            engine.submit(request)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            ident = "cmpl-" + uuid.uuid4().hex
            created = int(time.time())

            def event(payload):
                data = b"data: " + payload + b"\n\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def chunk(choices, usage=None):
                body = {"id": ident, "object": "text_completion", "created": created,
                        "model": MODEL, "choices": choices}
                if usage is not None:
                    body["usage"] = usage
                event(json.dumps(body).encode())

            made = 0
            while True:
                token = request.out.get()
                if token is None:
                    break
                made += 1
                finish = "length" if made == max_tokens else None
                chunk([{"index": 0, "text": chr(token), "finish_reason": finish}])
            if (body.get("stream_options") or {}).get("include_usage"):
                # No prefix cache: nothing of a prompt is ever served from one.
                chunk([], {"prompt_tokens": prompt_tokens, "completion_tokens": made,
                           "total_tokens": prompt_tokens + made,
                           "prompt_tokens_details": {"cached_tokens": 0}})
            event(b"[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=512)
    args = parser.parse_args()
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    engine = Engine(device, args.layers, args.hidden)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(engine))
    server.daemon_threads = True
    print(f"device {device}", flush=True)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
