import os, time, json
fd = os.open('/proc/thread-self/schedstat', os.O_RDONLY)
def rd(): return int(os.pread(fd, 100, 0).split()[1]) / 1e9
W=[];D=[]
for i in range(400):
    r0=rd(); t0=time.perf_counter(); time.sleep(0.004); t1=time.perf_counter(); r1=rd()
    W.append(t1-t0); D.append(r1-r0)
q=lambda x,p: sorted(x)[int(p*(len(x)-1))]
U=[w-d for w,d in zip(W,D)]
print("load %.1f"%os.getloadavg()[0], "wait us", [round(q(D,p)*1e6) for p in (0.1,0.5,0.9,0.99)], "wall ms", [round(q(W,p)*1e3,3) for p in (0.1,0.5,0.9)], "unq ms", [round(q(U,p)*1e3,3) for p in (0.01,0.1,0.5,0.9)], "over", sum(d>w for w,d in zip(W,D)))
