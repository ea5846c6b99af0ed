import sys,time,torch
sys.path.insert(0,"/tmp")
import kp
from pytest_gpuperf.core.settings import resolve,parse_layer
from pytest_gpuperf.measure.timing import measure,_l2_flusher
a=torch.randn(32,32,device="cuda");o=torch.empty_like(a)
def mk(n):
 def f():
  for _ in range(n):torch.mm(a,a,out=o)
 return f
fl,_=_l2_flusher(torch)
for n in(200,400,200,50):
 for b in(None,fl):
  cfg=resolve("cuda",parse_layer({"max_time":2.0},"t"))
  f=mk(n);r=measure(f,work=n,unit="items",cfg=cfg,backend="cuda");k=r.calls_per_sample
  def ch():
   for _ in range(k):f()
  w=kp.chunk_count(r.time.median*k,10,10**9);t0=time.perf_counter()
  tr=kp.profile_chunks(torch,ch,b,w,2.0);el=time.perf_counter()-t0
  s=tr if isinstance(tr,str) else kp.kernel_summary(tr,k,.95)
  ev=0 if isinstance(tr,str) else sum(map(len,tr))
  print(n,b is not None,"busy%.2f"%r.busy_fraction,"k",k,"wall %.1fus rel%.3f"%(r.time.median*1e6,(r.time.ci_high-r.time.ci_low)/r.time.median),"chunks",w,"pass %.3fs"%el,"ev",ev)
  print("  kt",s if isinstance(s,str) else "%.2fus rel%.4f n%d"%(s.median*1e6,(s.ci_high-s.ci_low)/s.median,s.n))
x=torch.randn(1<<20,device="cuda")
cfg=resolve("cuda",parse_layer({"cuda_graph":True},"t"))
from pytest_gpuperf.measure.timing import _capture_graph
g=_capture_graph(torch,lambda:x.mul_(1.0),20)
tr=kp.profile_chunks(torch,g.replay,None,10,2.0)
print("graph",tr if isinstance(tr,str) else kp.kernel_summary(tr,20,.95))
