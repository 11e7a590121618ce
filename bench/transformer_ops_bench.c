/*
 * transformer_ops_bench.c - CPU time of the ops of BERT's forward at batch
 * 8 (hidden 768, 12 heads, 128 tokens) on one thread, through the public
 * kernels (the automatic set, or AMPRT_ISA's): the linear layers (q, k, v
 * and the output projection; the feed-forward's two), the attention's two
 * batched products and its divide by sqrt(64).  Each op runs for about
 * 1.5 s of CPU after one untimed call; prints the fastest and the mean
 * call and the fastest's GFLOP/s.  bench/transformer_ops_torch.py times
 * PyTorch's F.linear, torch.bmm and divide on the same shapes.
 *
 *   cc -std=c99 -O2 -Iruntime/include -o tob bench/transformer_ops_bench.c build/libamprt.a -lm -lpthread
 *   ./tob
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "amprt.h"
static double cpu_ms(void){struct timespec t;clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t);return t.tv_sec*1e3+t.tv_nsec*1e-6;}
static amp_bf16 *mk(size_t n){amp_bf16 *p=malloc(n*2);for(size_t i=0;i<n;i++)p[i]=amp_f32_to_bf16((float)((i*2654435761u)%1000)/1000.0f-0.5f);return p;}
#define TIME(label, flops, stmt) do{ stmt; double best=1e30, tot=0; int n=0; double t0=cpu_ms(); while(cpu_ms()-t0<1500||n<3){double a=cpu_ms(); stmt; double e=cpu_ms()-a; if(e<best)best=e; tot+=e; n++;} \
  printf("%-44s %8.3f ms fastest %8.3f ms mean  %6.1f GFLOP/s (fastest)\n", label, best, tot/n, (flops)/best/1e6);}while(0)
int main(void){
  amp_set_threads(1);
  const int64_t R=1024;
  amp_bf16 *x=mk(R*3072),*w=mk(3072*768),*b=mk(3072),*y=mk(R*3072);
  TIME("linear [1024,768]x[768,768]^T (Q,K,V,O)", 2.0*R*768*768, amp_linear_bf16(R,768,768,x,w,b,y));
  TIME("linear [1024,768]x[3072,768]^T (FFN up)", 2.0*R*768*3072, amp_linear_bf16(R,768,3072,x,w,b,y));
  TIME("linear [1024,3072]x[768,3072]^T (FFN down)", 2.0*R*768*3072, amp_linear_bf16(R,3072,768,x,w,b,y));
  amp_bf16 *qa=mk(96*128*128),*kb=mk(96*128*128),*sc=mk(96*128*128);
  amp_gemm_desc d1={96,128,128,64,{128*64,64,1},{64*128,128,1},{0,0,0},1.0,0.0,0};
  TIME("bmm scores [96] [128,64]x[64,128]", 2.0*96*128*128*64, amp_gemm_bf16(&d1,qa,kb,NULL,sc));
  amp_gemm_desc d2={96,128,64,128,{128*128,128,1},{128*64,64,1},{0,0,0},1.0,0.0,0};
  TIME("bmm probs x v [96] [128,128]x[128,64]", 2.0*96*128*128*64, amp_gemm_bf16(&d2,sc,kb,NULL,qa));
  TIME("div_scalar bf16 [1572864]", 1572864.0, amp_div_scalar_bf16(1572864,sc,8.0f,qa));
  return 0;
}
