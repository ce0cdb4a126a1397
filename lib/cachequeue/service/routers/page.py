"""An app's page: the files of one folder, each at `/<name>` (`index.html` also at `/`).

One GET route per file, fixed when the app is built, instead of a static-files mount at
`/`: a mount answers every path and method no router took (`OPTIONS /v1/jobs` got
"Allow: GET, HEAD", `DELETE /v1/jobs` a 405 without the route's own Allow), while these
routes leave every other path to the routers, so an unknown path is a 404 problem and a
wrong method a 405 with the right Allow. Sub-folders are not served.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

__all__ = ["page_router"]


def page_router(folder: Path) -> APIRouter:
    """GET routes for the files directly inside `folder`."""
    router = APIRouter(include_in_schema=False)
    files = sorted(p for p in Path(folder).iterdir() if p.is_file())
    for path in files:
        router.add_api_route(f"/{path.name}", _serve(path), methods=["GET"])
        if path.name == "index.html":
            router.add_api_route("/", _serve(path), methods=["GET"])
    return router


def _serve(path: Path):
    async def file() -> FileResponse:
        return FileResponse(path)
    return file
