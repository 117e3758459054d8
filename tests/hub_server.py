"""A Hub-compatible server on loopback, for testing publishing with the real `huggingface_hub` client.

It keeps repositories in memory as commits (path -> bytes), branches, tags and pull-request
refs, and answers only the calls the client makes for what equita does: create a repo, validate
a card, preupload and commit files (inline, "regular" mode), tag, list refs, read repo info,
list the tree, paths-info, list a revision's commits, resolve (download) files, list
discussions (filtered by type and status, as the Hub does) and merge a pull request. Parquet
files go through the LFS batch API (basic transfer: a PUT of the bytes, checked against their
sha256), like on the Hub; other files are committed inline. `fail_next_commits` makes the next
commits fail with a 503; `fail_next_lfs_uploads` drops the connection of the next LFS uploads,
to test interrupted uploads. `commit_to_main` and `merge_pull` change a repository as its
maintainers would, for test setup.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

PREFIX = {"datasets": "dataset", "spaces": "space", "models": "model"}


def blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Repo:
    type: str
    id: str
    commits: dict = field(default_factory=dict)  # sha -> {"files": {path: bytes}, "parent": sha | None, "message": str}
    branches: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)
    pulls: list = field(default_factory=list)  # {"num", "title", "description", "head", "base", "status"}
    sdk: str | None = None

    def resolve(self, revision: str) -> str | None:
        revision = unquote(revision)
        if revision in self.branches:
            return self.branches[revision]
        if revision in self.tags:
            return self.tags[revision]
        match = re.fullmatch(r"refs/pr/(\d+)", revision)
        if match:
            for pull in self.pulls:
                if pull["num"] == int(match.group(1)):
                    return pull["head"]
        return revision if revision in self.commits else None

    def files(self, sha: str) -> dict:
        return self.commits[sha]["files"] if sha else {}


class HubState:
    def __init__(self):
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lock = threading.Lock()
        self.fail_next_commits = 0
        self.fail_next_lfs_uploads = 0
        self.lfs: dict[tuple[str, str, str], bytes] = {}  # (repo type, repo id, sha256) -> content, per repo as on the Hub
        self.requests: list[tuple[str, str, dict]] = []  # (method, path, headers) as received

    def create_repo(self, kind: str, repo_id: str, sdk: str | None = None) -> Repo:
        """A repository with its initial commit, as repo creation makes it (also for test setup)."""
        with self.lock:
            if (kind, repo_id) not in self.repos:
                repo = Repo(kind, repo_id, sdk=sdk)
                repo.branches["main"] = self.new_commit(repo, None, {".gitattributes": b"*.parquet filter=lfs\n"}, "initial commit")
                self.repos[(kind, repo_id)] = repo
            return self.repos[(kind, repo_id)]

    def commit_to_main(self, kind: str, repo_id: str, files: dict, message: str, delete: tuple = ()) -> str:
        """A maintainer's direct commit to main (test setup): `files` added or replaced, `delete` removed."""
        with self.lock:
            repo = self.repos[(kind, repo_id)]
            current = dict(repo.files(repo.branches["main"]))
            current.update(files)
            for path in delete:
                current.pop(path, None)
            repo.branches["main"] = self.new_commit(repo, repo.branches["main"], current, message)
            return repo.branches["main"]

    def merge_pull(self, kind: str, repo_id: str, num: int) -> str | None:
        """Merge an open pull request into main as the Hub does: what it changed since the commit it
        branched from is applied onto main; None when there is no such open pull request."""
        with self.lock:
            repo = self.repos.get((kind, repo_id))
            pull = next((p for p in repo.pulls if p["num"] == num), None) if repo else None
            if pull is None or pull["status"] != "open":
                return None
            head, base = repo.files(pull["head"]), repo.files(pull["base"])
            files = dict(repo.files(repo.branches["main"]))
            for path in set(head) | set(base):
                if head.get(path) != base.get(path):
                    if path in head:
                        files[path] = head[path]
                    else:
                        files.pop(path, None)
            repo.branches["main"] = self.new_commit(repo, repo.branches["main"], files, f"Merge pull request #{num}: {pull['title']}")
            pull["status"] = "merged"
            return repo.branches["main"]

    def new_commit(self, repo: Repo, parent: str | None, files: dict, message: str) -> str:
        sha = hashlib.sha1(json.dumps([parent, message, sorted((p, blob_oid(d)) for p, d in files.items())]).encode()).hexdigest()
        repo.commits[sha] = {"files": files, "parent": parent, "message": message}
        return sha


class Handler(BaseHTTPRequestHandler):
    state: HubState
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    # -- plumbing ----------------------------------------------------------------------------

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, payload=None, headers: dict | None = None, raw: bytes | None = None, head: bool = False):
        data = raw if raw is not None else json.dumps(payload if payload is not None else {}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream" if raw is not None else "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def _error(self, status: int, message: str):
        self._send(status, {"error": message}, headers={"X-Error-Message": message}, head=self.command == "HEAD")

    def _repo(self, kind: str, repo_id: str) -> Repo | None:
        return self.state.repos.get((PREFIX.get(kind, "model"), unquote(repo_id)))

    def _record(self):
        self.state.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))

    # -- routes ------------------------------------------------------------------------------

    def do_HEAD(self):
        self._record()
        self._resolve(head=True)

    def do_GET(self):
        self._record()
        url = urlparse(self.path)
        path = url.path
        if self._resolve(head=False):
            return
        match = re.fullmatch(r"/api/(datasets|spaces|models)/([^/]+/[^/]+)(?:/revision/(.+))?", path)
        if match:
            return self._info(match.group(1), match.group(2), match.group(3) or "main")
        match = re.fullmatch(r"/api/(datasets|spaces|models)/([^/]+/[^/]+)/refs", path)
        if match:
            return self._refs(match.group(1), match.group(2))
        match = re.fullmatch(r"/api/(datasets|spaces|models)/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?", path)
        if match:
            recursive = parse_qs(url.query).get("recursive", ["false"])[0].lower() in ("1", "true")
            return self._tree(match.group(1), match.group(2), match.group(3), match.group(4) or "", recursive)
        match = re.fullmatch(r"/api/(datasets|spaces|models)/([^/]+/[^/]+)/commits/(.+)", path)
        if match:
            return self._commits(match.group(1), match.group(2), match.group(3))
        match = re.fullmatch(r"/api/(datasets|spaces|models)/([^/]+/[^/]+)/discussions", path)
        if match:
            query = parse_qs(url.query)
            return self._discussions(match.group(1), match.group(2), query.get("type", [None])[0], query.get("status", [None])[0])
        self._error(404, f"no route for GET {path}")

    def do_POST(self):
        self._record()
        path = urlparse(self.path).path
        query = parse_qs(urlparse(self.path).query)
        body = self._body()
        if path == "/api/repos/create":
            return self._create(json.loads(body))
        if path == "/api/validate-yaml":
            return self._send(200, {"errors": [], "warnings": []})
        match = re.fullmatch(r"/api/(datasets|spaces|models)/([^/]+/[^/]+)/preupload/(.+)", path)
        if match:
            files = json.loads(body)["files"]
            mode = {True: "lfs", False: "regular"}
            return self._send(200, {"files": [{"path": f["path"], "uploadMode": mode[f["path"].endswith(".parquet")], "shouldIgnore": False} for f in files]})
        match = re.fullmatch(r"/(?:(datasets|spaces)/)?([^/]+/[^/]+)\.git/info/lfs/objects/batch", path)
        if match:
            return self._lfs_batch({"datasets": "dataset", "spaces": "space"}.get(match.group(1), "model"), match.group(2), json.loads(body))
        match = re.fullmatch(r"/api/(datasets|spaces|models)/([^/]+/[^/]+)/commit/(.+)", path)
        if match:
            create_pr = query.get("create_pr", ["0"])[0] in ("1", "true", "True")
            return self._commit(match.group(1), match.group(2), unquote(match.group(3)), body, create_pr)
        match = re.fullmatch(r"/api/(datasets|spaces|models)/([^/]+/[^/]+)/tag/(.+)", path)
        if match:
            return self._tag(match.group(1), match.group(2), match.group(3), json.loads(body))
        match = re.fullmatch(r"/api/(datasets|spaces|models)/([^/]+/[^/]+)/paths-info/(.+)", path)
        if match:
            paths = self._paths_from(body)
            return self._paths_info(match.group(1), match.group(2), match.group(3), paths)
        match = re.fullmatch(r"/api/(datasets|spaces|models)/([^/]+/[^/]+)/discussions/(\d+)/merge", path)
        if match:
            merged = self.state.merge_pull(PREFIX.get(match.group(1), "model"), unquote(match.group(2)), int(match.group(3)))
            return self._send(200, {}) if merged else self._error(404, "no open pull request with this number")
        self._error(404, f"no route for POST {path}")

    def do_PUT(self):
        self._record()
        match = re.fullmatch(r"/lfs-upload/(dataset|space|model)/([^/]+/[^/]+)/([0-9a-f]{64})", urlparse(self.path).path)
        if not match:
            return self._error(404, f"no route for PUT {self.path}")
        kind, repo_id, oid = match.groups()
        data = self._chunked() if "chunked" in self.headers.get("Transfer-Encoding", "") else self._body()
        with self.state.lock:
            if self.state.fail_next_lfs_uploads > 0:
                # A network failure mid-upload: the connection drops with no answer at all.
                self.state.fail_next_lfs_uploads -= 1
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
        if hashlib.sha256(data).hexdigest() != oid:
            return self._error(400, "uploaded content does not match its sha256")
        self.state.lfs[(kind, repo_id, oid)] = data
        self._send(200, {})

    def _chunked(self) -> bytes:
        data = b""
        while True:
            size = int(self.rfile.readline().strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return data
            data += self.rfile.read(size)
            self.rfile.readline()

    def _lfs_batch(self, kind: str, repo_id: str, request: dict):
        objects = []
        for obj in request["objects"]:
            entry = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            if (kind, repo_id, obj["oid"]) not in self.state.lfs:  # already stored: no action, the client skips it
                entry["actions"] = {"upload": {"href": f"http://{self.headers['Host']}/lfs-upload/{kind}/{repo_id}/{obj['oid']}", "header": {}}}
            objects.append(entry)
        self._send(200, {"transfer": "basic", "objects": objects})

    def _paths_from(self, body: bytes) -> list[str]:
        content_type = self.headers.get("Content-Type", "")
        if "json" in content_type:
            return json.loads(body).get("paths", [])
        return parse_qs(body.decode()).get("paths", [])

    # -- handlers ----------------------------------------------------------------------------

    def _create(self, request: dict):
        kind = request.get("type") or "model"
        repo_id = f"{request['organization']}/{request['name']}" if request.get("organization") else request["name"]
        prefix = {"dataset": "datasets/", "space": "spaces/"}.get(kind, "")
        url = f"http://{self.headers['Host']}/{prefix}{repo_id}"
        if (kind, repo_id) in self.state.repos:
            # The client reads "url" from this answer too when it was told exist_ok.
            return self._send(409, {"error": "You already created this repo", "url": url}, headers={"X-Error-Message": "You already created this repo"})
        self.state.create_repo(kind, repo_id, sdk=request.get("sdk"))
        self._send(200, {"url": url, "name": repo_id, "id": repo_id})

    def _info(self, kind: str, repo_id: str, revision: str):
        repo = self._repo(kind, repo_id)
        if repo is None:
            return self._error(404, "Repository not found")
        sha = repo.resolve(revision)
        if sha is None:
            return self._error(404, f"Invalid rev id: {unquote(revision)}")
        files = repo.files(sha)
        self._send(200, {
            "id": repo.id, "_id": repo.id, "sha": sha, "private": False, "disabled": False, "gated": False,
            "siblings": [{"rfilename": p, "size": len(d), "blobId": blob_oid(d)} for p, d in sorted(files.items())],
            "lastModified": "2026-01-01T00:00:00.000Z", "tags": [], "downloads": 0, "likes": 0, "sdk": repo.sdk,
        })  # fmt: skip

    def _refs(self, kind: str, repo_id: str):
        repo = self._repo(kind, repo_id)
        if repo is None:
            return self._error(404, "Repository not found")

        def ref(name, prefix, sha):
            return {"name": name, "ref": f"{prefix}{name}", "targetCommit": sha}

        self._send(200, {
            "branches": [ref(n, "refs/heads/", s) for n, s in repo.branches.items()],
            "tags": [ref(n, "refs/tags/", s) for n, s in repo.tags.items()],
            "converts": [],
            "pullRequests": [{"name": f"refs/pr/{p['num']}", "ref": f"refs/pr/{p['num']}", "targetCommit": p["head"]} for p in repo.pulls],
        })  # fmt: skip

    def _entries(self, files: dict, paths: list[str]) -> list[dict]:
        out = []
        for path in paths:
            if path in files:
                out.append({"type": "file", "path": path, "oid": blob_oid(files[path]), "size": len(files[path])})
            elif any(p.startswith(path.rstrip("/") + "/") for p in files):
                out.append({"type": "directory", "path": path.rstrip("/"), "oid": hashlib.sha1(path.encode()).hexdigest(), "size": 0})
        return out

    def _tree(self, kind: str, repo_id: str, revision: str, prefix: str, recursive: bool):
        repo = self._repo(kind, repo_id)
        sha = repo.resolve(revision) if repo else None
        if sha is None:
            return self._error(404, "Revision not found")
        files = repo.files(sha)
        prefix = unquote(prefix).strip("/")
        under = [p for p in files if not prefix or p.startswith(prefix + "/")]
        entries, seen = [], set()
        for path in sorted(under):
            rest = path[len(prefix) + 1 :] if prefix else path
            if recursive or "/" not in rest:
                entries.append({"type": "file", "path": path, "oid": blob_oid(files[path]), "size": len(files[path])})
            top = (prefix + "/" if prefix else "") + rest.split("/")[0]
            if "/" in rest and top not in seen:
                seen.add(top)
                entries.append({"type": "directory", "path": top, "oid": hashlib.sha1(top.encode()).hexdigest(), "size": 0})
        if prefix and not under:
            return self._error(404, f"{prefix} not found")
        self._send(200, entries)

    def _paths_info(self, kind: str, repo_id: str, revision: str, paths: list[str]):
        repo = self._repo(kind, repo_id)
        sha = repo.resolve(revision) if repo else None
        if sha is None:
            return self._error(404, "Revision not found")
        self._send(200, self._entries(repo.files(sha), paths))

    def _resolve(self, head: bool) -> bool:
        match = re.fullmatch(r"/(?:(datasets|spaces)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", urlparse(self.path).path)
        if not match:
            if head:
                self._error(404, "not found")
            return False
        kind = {"datasets": "datasets", "spaces": "spaces"}.get(match.group(1), "models")
        repo = self._repo(kind, match.group(2))
        sha = repo.resolve(match.group(3)) if repo else None
        path = unquote(match.group(4))
        if sha is None or path not in repo.files(sha):
            self._error(404, "Entry not found")
            return True
        data = repo.files(sha)[path]
        headers = {"X-Repo-Commit": sha, "ETag": f'"{blob_oid(data)}"', "Accept-Ranges": "bytes"}
        self._send(200, raw=data, headers=headers, head=head)
        return True

    def _commit(self, kind: str, repo_id: str, revision: str, body: bytes, create_pr: bool):
        with self.state.lock:
            if self.state.fail_next_commits > 0:
                self.state.fail_next_commits -= 1
                return self._error(503, "Service temporarily unavailable")
            repo = self._repo(kind, repo_id)
            if repo is None:
                return self._error(404, "Repository not found")
            base = repo.resolve(revision)
            if base is None:
                return self._error(404, f"Invalid rev id: {revision}")
            files = dict(repo.files(base))
            message = ""
            description = ""
            for line in body.decode().splitlines():
                if not line.strip():
                    continue
                entry = json.loads(line)
                value = entry["value"]
                if entry["key"] == "header":
                    message, description = value.get("summary", ""), value.get("description", "")
                elif entry["key"] == "file":
                    content = value["content"]
                    files[value["path"]] = base64.b64decode(content) if value.get("encoding") == "base64" else content.encode()
                elif entry["key"] == "lfsFile":
                    if (repo.type, repo.id, value["oid"]) not in self.state.lfs:
                        return self._error(400, f"LFS object {value['oid']} for {value['path']} was never uploaded")
                    files[value["path"]] = self.state.lfs[(repo.type, repo.id, value["oid"])]
                elif entry["key"] == "deletedFile":
                    files.pop(value["path"], None)
                else:
                    return self._error(400, f"unsupported commit operation {entry['key']}")
            sha = self.state.new_commit(repo, base, files, message)
            prefix = {"dataset": "datasets/", "space": "spaces/"}.get(repo.type, "")
            answer = {"commitOid": sha, "commitUrl": f"http://{self.headers['Host']}/{prefix}{repo.id}/commit/{sha}", "success": True}
            if create_pr:
                number = len(repo.pulls) + 1
                repo.pulls.append({"num": number, "title": message, "description": description, "head": sha, "base": base, "status": "open"})
                answer["pullRequestUrl"] = f"http://{self.headers['Host']}/{prefix}{repo.id}/discussions/{number}"
            else:
                pull = next((p for p in repo.pulls if f"refs/pr/{p['num']}" == revision), None)
                if pull is not None:  # a commit pushed to an open pull request's ref moves that ref, not main
                    pull["head"] = sha
                else:
                    repo.branches[revision if revision in repo.branches else "main"] = sha
        self._send(200, answer)

    def _tag(self, kind: str, repo_id: str, revision: str, request: dict):
        with self.state.lock:
            repo = self._repo(kind, repo_id)
            sha = repo.resolve(revision) if repo else None
            if sha is None:
                return self._error(404, "Revision not found")
            if request["tag"] in repo.tags:
                return self._error(409, f"Tag {request['tag']} already exists")
            repo.tags[request["tag"]] = sha
        self._send(200, {})

    def _commits(self, kind: str, repo_id: str, revision: str):
        """A revision's history, newest first (one page: no Link header)."""
        repo = self._repo(kind, repo_id)
        sha = repo.resolve(revision) if repo else None
        if sha is None or sha not in repo.commits:
            return self._error(404, f"Invalid rev id: {unquote(revision)}")
        history = []
        while sha is not None:
            commit = repo.commits[sha]
            history.append({"id": sha, "authors": [{"user": "equita-test"}], "date": "2026-01-01T00:00:00.000Z", "title": commit["message"], "message": ""})
            sha = commit["parent"]
        self._send(200, history)

    def _discussions(self, kind: str, repo_id: str, kind_filter: str | None = None, status: str | None = None):
        repo = self._repo(kind, repo_id)
        if repo is None:
            return self._error(404, "Repository not found")
        wanted = [p for p in repo.pulls if kind_filter in (None, "all", "pull_request") and status in (None, "all", p["status"])]
        items = [
            {"num": p["num"], "title": p["title"], "status": p["status"], "isPullRequest": True, "pinned": False,
             "author": {"name": "equita-test", "type": "user"}, "createdAt": "2026-01-01T00:00:00.000Z", "repo": {"name": repo.id, "type": repo.type},
             "numComments": 0, "topReactions": []}
            for p in wanted
        ]  # fmt: skip
        self._send(200, {"discussions": items, "count": len(items), "start": 0, "numClosedDiscussions": 0})


def start(state: HubState | None = None) -> tuple[ThreadingHTTPServer, HubState]:
    """Start the server on a free loopback port in a daemon thread; returns (server, state)."""
    state = state or HubState()
    handler = type("BoundHandler", (Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # a client hanging up mid-response is not a test failure
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


@contextmanager
def running(home: Path, token: str):
    """A loopback Hub, and the environment that points huggingface_hub (and equita) at it with `token`.

    Whatever the caller's offline switches (TRANSFORMERS_OFFLINE counts for huggingface_hub too),
    this Hub is reachable; `home` is a fresh HF_HOME, so nothing of the user's cache is read.
    """
    server, state = start()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{server.server_port}", HF_HUB_DISABLE_XET="1", HF_TOKEN=token, HF_HOME=str(home),
               HF_HUB_DISABLE_TELEMETRY="1")  # fmt: skip
    try:
        yield state, env
    finally:
        server.shutdown()
