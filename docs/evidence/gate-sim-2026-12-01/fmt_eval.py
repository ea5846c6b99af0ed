import re,sys
for f in sys.argv[1:]:
    k=tol=None
    print(f"    k  tol rule          run FA   95% CP            worst          decided (exLB)  UNCH x  det5   det10  reg@2%  cw5 fails  cw5 UNCH")
    for line in open(f):
        m=re.match(r"== k=(\d+) tol=(\d+)%",line)
        if m: k,tol=m.groups(); continue
        if line.startswith("new"):
            t=line.split()
            rule=t[0]; fa=t[1]; cpi=t[2]
            rest=t[3:]
            worst=rest[0]; rest=rest[1:]
            name=""
            if rest[0].startswith("m"): name=rest[0] if worst!="0.000%" else ""; rest=rest[1:]
            dec,exlb,unx,d5,d10,u5,r2,cwf,cwu,env=rest
            print(f"    {k:<2} {tol}%  {rule:<13} {fa:<8} {cpi:<17} {worst+' '+name:<14} {dec:<5} ({exlb})   {unx:<6}  {d5:<6} {d10:<6} {r2:<6}  {cwf:<9}  {cwu}")
    print()
