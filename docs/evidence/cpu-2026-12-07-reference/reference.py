import torch, time, statistics
torch.set_num_threads(1)
a = torch.randn(256,256)
r = torch.randn(192,192)
x = torch.randn(256,256); ln=torch.nn.LayerNorm(256)
def t(f,k=12):
    s=time.perf_counter_ns()
    for _ in range(k): f()
    return (time.perf_counter_ns()-s)/k/1e3
for _ in range(30): a@a; r@r
A=[];R=[];L=[]
with torch.no_grad():
  for i in range(40):
    A.append(t(lambda: a@a)); R.append(t(lambda: r@r)); L.append(t(lambda: torch.nn.functional.gelu(ln(x)),4))
m=statistics.median
ratio=[p/q for p,q in zip(A,R)]; lr=[p/q for p,q in zip(L,R)]
print(f"mm {m(A):.1f} ref {m(R):.1f} mm/ref {m(ratio):.4f}  ln {m(L):.1f} ln/ref {m(lr):.4f}")
