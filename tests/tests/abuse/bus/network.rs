//! Network rules: `/v1/dns` on public names only, RDAP redirects, proxies, `/metrics`, streaming bulk deadlines and suggestions charge once.
