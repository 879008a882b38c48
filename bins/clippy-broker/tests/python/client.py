"""A clippy broker client in plain Python, written from CONTRACTS/BROKER.md alone.

Usage: client.py SOCKET SESSION_NAME TURN_ID CONTENT_HEX

Says hello as a client, lists the sessions (SESSION_NAME must be there), fetches TURN_ID by id
and by session name and checks its content bytes, and checks that an unknown turn is refused
with reason turn_not_found while the connection stays usable. Prints OK on success.
"""
import socket
import struct
import sys

import msgpack


class Broker:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(path)
        self.next_id = 1

    def _recv_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError("broker closed the connection")
            data += chunk
        return data

    def request(self, type_, **fields):
        msg_id = self.next_id
        self.next_id += 1
        payload = msgpack.packb({"type": type_, "id": msg_id, **fields}, use_bin_type=True)
        self.sock.sendall(struct.pack(">I", len(payload)) + payload)
        while True:
            (length,) = struct.unpack(">I", self._recv_exact(4))
            reply = msgpack.unpackb(self._recv_exact(length), raw=False)
            if reply["id"] == msg_id:
                return reply


def check(condition, what):
    if not condition:
        print("FAILED:", what)
        sys.exit(1)


def main():
    path, name, turn_id, content_hex = sys.argv[1:5]
    content = bytes.fromhex(content_hex)
    broker = Broker(path)

    ack = broker.request("hello", version=1, role="client")
    check(ack["type"] == "hello_ack" and ack["version"] == 1, f"hello: {ack}")

    reply = broker.request("list_sessions")
    check(reply["type"] == "sessions", f"list_sessions: {reply}")
    named = [s for s in reply["sessions"] if s.get("name") == name]
    check(len(named) == 1, f"session named {name} in {reply['sessions']}")
    check(named[0]["connected"] is True and named[0]["last_turn_id"] == turn_id, f"{named[0]}")

    for arg in (turn_id, name):
        reply = broker.request("get_turn", turn_id=arg)
        check(reply["type"] == "turn", f"get_turn {arg}: {reply}")
        check(isinstance(reply["content"], bytes), "content is MessagePack bin")
        check(reply["content"] == content, f"content {reply['content']!r} != {content!r}")
        check(reply["turn"]["turn_id"] == turn_id, f"{reply['turn']}")
        check(reply["turn"]["byte_length"] == len(content), f"{reply['turn']}")

    reply = broker.request("get_turn", turn_id=named[0]["session"] + ":999")
    check(reply["type"] == "error" and reply["reason"] == "turn_not_found", f"{reply}")

    reply = broker.request("no_such_request")
    check(reply["type"] == "error" and reply["reason"] == "unknown_type", f"{reply}")

    reply = broker.request("list_turns", session=name, limit=1)
    check(reply["type"] == "turns" and [t["turn_id"] for t in reply["turns"]] == [turn_id], f"{reply}")
    print("OK")


if __name__ == "__main__":
    main()
