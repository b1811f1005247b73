#!/usr/bin/env python3
"""Tiles an Nsight Systems SQLite export N times in time, for the speed and
memory row of docs/nsys.md: the kernel, runtime, NVTX and memcpy rows are
copied N-1 times with their times shifted past the capture and their
correlation ids past the largest one. Usage: SRC DST N (DST is overwritten;
SRC is only read)."""
import sqlite3, shutil, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
shutil.copyfile(src, dst)
con = sqlite3.connect(dst)
lo, hi = con.execute('select min(start), max("end") from CUPTI_ACTIVITY_KIND_KERNEL').fetchone()
span = hi - lo + 1_000_000
cmax = max(con.execute(f'select max(correlationId) from {t}').fetchone()[0] or 0 for t in
           ['CUPTI_ACTIVITY_KIND_KERNEL','CUPTI_ACTIVITY_KIND_RUNTIME','CUPTI_ACTIVITY_KIND_MEMCPY']) + 1
for t in ['CUPTI_ACTIVITY_KIND_KERNEL','CUPTI_ACTIVITY_KIND_RUNTIME','NVTX_EVENTS','CUPTI_ACTIVITY_KIND_MEMCPY']:
    cols = [r[1] for r in con.execute(f'pragma table_info({t})')]
    base = con.execute(f'select * from {t}').fetchall()
    for i in range(1, n):
        exprs = []
        for c in cols:
            if c in ('start', 'end'): exprs.append(f'"{c}" + {i*span}')
            elif c == 'correlationId': exprs.append(f'correlationId + {i*cmax}')
            elif c == 'id': exprs.append('NULL')
            else: exprs.append(f'"{c}"')
        collist = ','.join(f'"{c}"' for c in cols)
        con.execute(f'insert into {t} ({collist}) select {",".join(exprs)} from {t} where rowid <= {len(base)}')
con.commit(); con.execute('vacuum'); con.close()
