"""The servers the S3 backends stand behind: the request ledger (``ledger``), the counting
reverse proxy for remote endpoints (``proxy``) and the ledger's small listing pages
(``listing_pages``)."""
