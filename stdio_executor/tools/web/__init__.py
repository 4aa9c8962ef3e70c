"""WebFetch: a URL's content as Markdown for the model (SPEC section 5).

Owns nothing itself; the catalog loads the tool by this name. ``fetch`` owns the tool, the
URL rules and the HTTP exchange; ``convert`` owns turning a response body into text.
"""

from .fetch import WebFetchTool

__all__ = ["WebFetchTool"]
