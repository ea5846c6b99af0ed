import sys, math, numpy as np
from collections import Counter
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[3] / 'tools'))
from gatesim import drive, model
import gate_sim_project as g
noise=model.load(); drive.scratch_commit()
k=3; n=int(sys.argv[1]); rng=np.random.default_rng(5)
change,_=g._slowdown("det", rng, n, noise, 0.05)
base,cur,again=model.sessions(rng,n,k,noise,change)
tab=Counter(); why=Counter()
for i in range(n):
    keep=[]
    codes,shifts,reg,line=drive.judge_one(noise,base[i],cur[i],again[i],cur[i]-change[i],change[i],rng,tol=0.03,false_alarm=0.01,rounds=6,keep=keep)
    for r in keep:
        j=int(r.nodeid[1:])
        if change[i,j]==0: continue
        m="throughput_kernels" if noise.kern[j] else "throughput"
        v=r.verdicts[m]
        cls=noise.round_class(j)
        tab[(cls,str(v.status))]+=1
        if str(v.status)!="regressed":
            why[(cls, v.trail[-1].rule if v.trail else None, v.trail[-1].stage if v.trail else None)]+=1
for k_,c in sorted(tab.items()): print(k_,c)
for k_,c in why.most_common(15): print(c,k_)
