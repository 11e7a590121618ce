/*
 * test_backward_unary.c - the elementwise gradient kernels of
 * amprt/backward.h (the unary list, softplus, clamp, pow_scalar,
 * rpow_scalar, maximum, atan2, pow), softmax/log_softmax_backward,
 * reverse_cumsum, logsumexp_backward and norm_backward: every dtype through
 * the public and the reference table (backward_test_util.h: f32/bf16/f16
 * against the f64 kernel on the same rounded inputs, f64 against finite
 * differences of the forward f64 kernel), broadcasting against explicit
 * expansion, and fixed cases whose answers PyTorch 1.13 autograd printed in
 * float64 (kinks, ties, NaN, thresholds).
 */
#define _POSIX_C_SOURCE 200809L

#include "backward_test_util.h"

/* ---- PyTorch's numbers (tools: /usr/bin/python3, torch 1.13, float64) --- */
static const double ux[] = { -2.5, -1.0, -0.3, 0.0, 0.4, 1.0, 3.0 };
static const double t_relu[] = { 0.0, 0.0, 0.0, 0.0, 0.6666666666666666, 1.0833333333333333, 1.5 };
static const double t_abs[] = { 1.0, 0.5833333333333333, 0.16666666666666663, 0.0, 0.6666666666666666, 1.0833333333333333, 1.5 };
static const double t_gelu[] = { 0.03761108590814519, 0.04860069117615036, -0.044612038862148345, 0.12499999999999997, 0.535153198487769, 1.1735917598033268, 1.5179184708062758 };
static const double t_gelu_tanh[] = { 0.03795157621266618, 0.048395715576706466, -0.044617424726866355, 0.12499999999999997, 0.5351058896137075, 1.173211090832931, 1.5173762499464543 };
static const double t_silu[] = { 0.09940111134152683, -0.0421922014082994, -0.05870333161351953, 0.12499999999999997, 0.46319463893937574, 1.0049763878607774, 1.632156159022754 };
static const double t_hardswish[] = { 0.33333333333333337, -0.09722222222222222, -0.06666666666666665, 0.12499999999999997, 0.42222222222222217, 0.9027777777777777, 2.25 };
/* hardswish's pieces meet at -3 and 3, both in the middle piece; a NaN x gets dy */
static const double hsx[] = { -4.0, -3.0, 3.0, 4.0, NAN };
static const double hsdy[] = { 1.0, 1.0, 1.0, 1.0, 1.0 };
static const double t_hardswish_edges[] = { 0.0, -0.5, 1.5, 1.0, 1.0 };
static const double t_hardsigmoid[] = { -0.1666666716337204, -0.09722222511967021, -0.02777777860562006, 0.04166666790843009, 0.11111111442248026, 0.1805555609365304, 0.0 };
static const double t_selu[] = { -0.1443135819741343, -0.3772816851036415, -0.21707200424470904, 0.43952483521184404, 0.7004673249036536, 1.138259402968437, 1.5760514810332207 };
static const double t_mish[] = { 0.10974357275018566, -0.03454310759514709, -0.06808514615595035, 0.14999999999999997, 0.5580116683611974, 1.1364559051081082, 1.5316603663941653 };
static const double t_softsign[] = { -0.08163265306122447, -0.14583333333333331, -0.09861932938856013, 0.24999999999999994, 0.34013605442176875, 0.2708333333333333, 0.09375 };
static const double t_logsigmoid[] = { -0.9241418199787564, -0.42645083753416946, -0.0957404194686098, 0.12499999999999997, 0.267541559925032, 0.29135320648416135, 0.07113880976635018 };
static const double t_hardsigmoid_edges[] = { 0.0, 0.0, 0.1666666716337204, 0.0, 0.0, 0.0 };
static const double t_selu_edges[] = { 0.08753061208026487, 1.0507009873554805, 1.7580993408473766, 1.0507009873554805, 1.0507009873554805, 0.0 };
static const double t_mish_edges[] = { -0.09339311453232084, 1.0211069109294435, 0.6, NAN, NAN, NAN };
static const double t_softsign_edges[] = { 0.0625, 0.0625, 1.0, NAN, NAN, NAN };
static const double t_logsigmoid_edges[] = { 0.9525741268224333, 0.04742587317756679, 0.5, NAN, 0.0, 1.0 };
/* sign, floor, ceil, round, trunc: zeros_like; frac: dy */
static const double t_sin[] = { 0.8011436155469337, -0.3151763450897482, -0.15922274818760096, 0.24999999999999994, 0.61404066266859, 0.585327498023818, -1.4849887449006682 };
static const double t_cos[] = { -0.5984721441039564, -0.4908580744712729, -0.04925336777688991, -0.0, -0.259612228205767, -0.9115935668752212, -0.2116800120898008 };
static const double t_atan[] = { -0.13793103448275862, -0.29166666666666663, -0.15290519877675837, 0.24999999999999994, 0.5747126436781608, 0.5416666666666666, 0.15 };
static const double t_erf[] = { -0.00217828423035271, -0.24214604016201355, -0.17187681826982715, 0.2820947917738781, 0.6410275325595385, 0.44969978887231093, 0.00020887957792012178 };
static const double t_erfc[] = { 0.00217828423035271, 0.24214604016201355, 0.17187681826982715, -0.2820947917738781, -0.6410275325595385, -0.44969978887231093, -0.00020887957792012178 };
static const double t_sign[] = { 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 };
static const double t_floor[] = { 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 };
static const double t_ceil[] = { 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 };
static const double t_round[] = { 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 };
static const double t_trunc[] = { 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 };
static const double t_frac[] = { -1.0, -0.5833333333333333, -0.16666666666666663, 0.24999999999999994, 0.6666666666666666, 1.0833333333333333, 1.5 };
/* the boundaries, -0, NaN and the infinities, one element at a time (PyTorch's scalar kernels) */
static const double ex[] = { -3.0, 3.0, -0.0, NAN, INFINITY, -INFINITY };
static const double edy[] = { 1.0, 1.0, 1.0, 1.0, 1.0, 1.0 };
static const double t_sigmoid[] = { -0.07010371654510815, -0.1146902943908644, -0.040743051948457634, 0.062499999999999986, 0.16017383049435274, 0.21299626101160532, 0.06776498959636801 };
static const double t_tanh[] = { -0.02659222668316057, -0.24498503260818189, -0.15252282697110484, 0.24999999999999994, 0.5704258573874518, 0.45497220341519495, 0.01479905574816025 };
static const double t_exp[] = { -0.0820849986238988, -0.21459634068334132, -0.12346970344695295, 0.24999999999999994, 0.9945497984275136, 2.944805314163965, 30.128305384781502 };
static const double t_sinh[] = { -6.132289479663686, -0.9001303703088921, -0.17422308568814338, 0.24999999999999994, 0.72071491455897, 1.671670687716514, 15.101492993666648 };
static const double t_cosh[] = { 6.0502044810397875, 0.6855340296255508, 0.05075338224119042, 0.0, 0.27383488386854365, 1.2731346264474515, 15.026812391114854 };
static const double t_expm1[] = { -0.08208499862389884, -0.21459634068334132, -0.12346970344695295, 0.24999999999999994, 0.9945497984275136, 2.9448053141639656, 30.128305384781502 };
static const double udy[] = { -1.0, -0.5833333333333333, -0.16666666666666663, 0.24999999999999994, 0.6666666666666666, 1.0833333333333333, 1.5 };
static const double upx[] = { 0.2, 0.5, 1.0, 2.0, 3.0 };
static const double t_log[] = { -5.0, -0.75, 0.25, 0.4375, 0.5 };
static const double t_sqrt[] = { -1.118033988749895, -0.2651650429449553, 0.125, 0.30935921676911454, 0.43301270189221935 };
static const double t_rsqrt[] = { 5.590169943749475, 0.5303300858899105, -0.125, -0.15467960838455724, -0.14433756729740652 };
static const double t_reciprocal[] = { 25.0, 1.5, -0.25, -0.21875, -0.16666666666666666 };
static const double t_log10[] = { -2.171472409516259, -0.3257208614274389, 0.10857362047581297, 0.1900038358326727, 0.2171472409516259 };
static const double t_log2[] = { -7.213475204444817, -1.0820212806667227, 0.36067376022224085, 0.6311790803889216, 0.7213475204444818 };
static const double t_log1p[] = { -0.8333333333333334, -0.25, 0.125, 0.2916666666666667, 0.375 };
static const double updy[] = { -1.0, -0.375, 0.25, 0.875, 1.5 };
static const double uux[] = { -0.9, -0.5, 0.0, 0.3, 0.7 };
static const double t_acos[] = { 2.294157338705618, 0.4330127018922194, -0.25, -0.9172492321316784, -2.100420126042015 };
static const double t_asin[] = { -2.294157338705618, -0.4330127018922194, 0.25, 0.9172492321316784, 2.100420126042015 };
static const double t_tan[] = { -2.587998733259648, -0.4869174039035718, 0.25, 0.9587278009072286, 2.5641745737946757 };
static const double t_erfinv[] = { -3.4280428114518418, -0.4172193071144811, 0.22155673136318949, 0.8352053139854807, 2.2745448260006462 };
static const double uudy[] = { -1.0, -0.375, 0.25, 0.875, 1.5 };
static const double px[] = { -2.0, -0.5, 0.0, 0.5, 1.5, 1.75, NAN };
static const double t_softplus[] = { -0.017986209962091555, -0.1568824957991638, -0.08333333333333331, 0.1827646446575012, 0.6350494178816221, 1.0833333333333333, NAN };
static const double t_clamp[] = { 0.0, -0.5833333333333333, -0.16666666666666663, 0.24999999999999994, 0.6666666666666666, 0.0, 0.0 };
static const double t_pow25[] = { NAN, NAN, -0.0, 0.22097086912079605, 3.0618621784789726, 6.269879409033274, NAN };
static const double t_pow3[] = { -12.0, -0.43749999999999994, -0.0, 0.18749999999999994, 4.5, 9.953125, NAN };
static const double t_pow0[] = { 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 };
static const double t_powm05[] = { NAN, NAN, INFINITY, -0.35355339059327373, -0.18144368465060579, -0.23397800710095018, NAN };
static const double t_rpow[] = { -0.14660651709986483, -0.33804933302291373, -0.15271512197902581, 0.36219571395312183, 2.4146380930208124, 4.933900820469113, NAN };
static const double t_rpow0[] = { INFINITY, INFINITY, -0.0, 0.0, 0.0, 0.0, NAN };
/* hardtanh (min -0.5, max 1.5; defaults), relu6, leaky_relu (0.2; default), elu (alpha 1.5), celu (alpha 2) */
static const double t_hardtanh[] = { 0.0, 0.0, -0.16666666666666663, 0.24999999999999994, 0.0, 0.0, 1.5 };
static const double t_relu6[] = { 0.0, 0.0, 0.0, 0.24999999999999994, 0.6666666666666666, 1.0833333333333333, 1.5 };
static const double t_leaky_relu[] = { -0.2, -0.11666666666666665, -0.033333333333333326, 0.24999999999999994, 0.6666666666666666, 1.0833333333333333, 0.30000000000000004 };
static const double t_elu[] = { -0.20300292485491905, -0.5307143272485542, -0.24999999999999994, 0.24999999999999994, 0.6666666666666666, 1.0833333333333333, 1.5 };
static const double t_celu[] = { -0.36787944117144233, -0.45430045679165276, -0.16666666666666663, 0.24999999999999994, 0.6666666666666666, 1.0833333333333333, 1.5 };
static const double t_hardtanh_def[] = { 0.0, -0.5833333333333333, -0.16666666666666663, 0.24999999999999994, 0.0, 0.0, 1.5 };
static const double t_leaky_def[] = { -0.01, -0.005833333333333333, -0.0016666666666666663, 0.24999999999999994, 0.6666666666666666, 1.0833333333333333, 0.015 };
static const double r6x[] = { -0.0, 0.0, 6.0, -1.0, 7.0 };
static const double t_relu6_edges[] = { 0.0, 0.0, 0.0, 0.0, 0.0 };
static const double pdy[] = { -1.0, -0.5833333333333333, -0.16666666666666663, 0.24999999999999994, 0.6666666666666666, 1.0833333333333333, 1.5 };
static const double ba[] = { 1.0, NAN, 2.0, -1.0, 0.0, 0.0, 3.0 };
static const double bb[] = { 1.0, 2.0, NAN, 1.0, -0.0, 2.0, 0.5 };
static const double bdy[] = { -1.0, -0.5833333333333333, -0.16666666666666663, 0.24999999999999994, 0.6666666666666666, 1.0833333333333333, 1.5 };
static const double t_max_da[] = { -0.5, -0.5833333333333333, -0.16666666666666663, 0.0, 0.3333333333333333, 0.0, 1.5 };
static const double t_max_db[] = { -0.5, -0.5833333333333333, -0.16666666666666663, 0.24999999999999994, 0.3333333333333333, 1.0833333333333333, 0.0 };
static const double t_atan2_da[] = { -0.5, 0.06862745098039215, -0.08333333333333331, 0.14999999999999997, 0.0, -1.0833333333333333, 0.34615384615384615 };
static const double t_atan2_db[] = { 0.5, 0.2745098039215686, 0.0, -0.04999999999999999, -0.2222222222222222, -0.0, -0.23076923076923078 };
static const double t_pow_da[] = { -1.0, 0.10311973892303818, -0.0, 0.2651650429449553, 0.0, -INFINITY, 18.0 };
static const double t_pow_db[] = { -0.0, -0.2859086251783262, -0.0, -0.06126613396678419, 0.7324081924454064, -INFINITY, 8.317766166719343 };
static const double ba2[] = { 1.0, 2.0, 0.0, 0.5, 3.0, 0.0, 2.0 };
static const double bb2[] = { 1.0, -0.5, 2.0, 1.5, 0.0, -1.0, 3.0 };
static const double sx[] = { 0.5, -1.0, 2.0, 0.0, 3.0, 3.0, -2.0, 1.0 };
static const double t_softmax[] = { -0.09868040412963117, -0.009392219588117492, 0.06495934198867043, 0.04311328172907828, -0.11048495735139988, 0.05624270260986098, 0.0015023624853710885, 0.05273989225616788 };
static const double sdy_softmax[] = { -1.0, -0.6428571428571428, -0.2857142857142857, 0.0714285714285714, 0.42857142857142855, 0.7857142857142857, 1.1428571428571428, 1.5 };
static const double t_log_softmax[] = { -0.7057455394721805, -0.5772000979551806, 1.0330427139314664, 0.24990292349589477, -1.3720872990101884, -1.0149444418673312, 1.1307243997872571, 1.2563073410902632 };
static const double sdy_log_softmax[] = { -1.0, -0.6428571428571428, -0.2857142857142857, 0.0714285714285714, 0.42857142857142855, 0.7857142857142857, 1.1428571428571428, 1.5 };
static const double t_lse[] = { -0.15844470951497971, -0.03535379340874887, -0.7100999228861742, -0.09610157419009721, 0.7002561718372955, 0.7002561718372955, 0.004718288971622182, 0.0947693673537865 };
static const double sdy_lse[] = { -1.0, 1.5 };
static const double t_cumsum[] = { -1.8571428571428572, -0.8571428571428571, -0.2142857142857143, 0.0714285714285714, 3.8571428571428568, 3.4285714285714284, 2.642857142857143, 1.5 };
static const double sdy_cumsum[] = { -1.0, -0.6428571428571428, -0.2857142857142857, 0.0714285714285714, 0.42857142857142855, 0.7857142857142857, 1.1428571428571428, 1.5 };
static const double nx[] = { 1.0, -3.0, 3.0, 0.0, 2.0, -1.0, 0.5, 0.0 };
static const double t_n1[] = { -1.0, 1.0, -1.0, -0.0, 1.5, -1.5, 1.5, 0.0 };
static const double t_n2[] = { -0.22941573387056174, 0.6882472016116852, -0.6882472016116852, -0.0, 1.3093073414159544, -0.6546536707079772, 0.3273268353539886, 0.0 };
static const double t_n3[] = { -0.06914459019566169, 0.6223013117609552, -0.6223013117609552, -0.0, 1.3740293248376654, -0.34350733120941634, 0.08587683280235409, 0.0 };
static const double t_n05[] = { -4.464101615137754, 2.577350269189626, -2.577350269189626, -0.0, 3.310660171779821, -4.681980515339464, 6.621320343559642, 0.0 };
static const double t_n15[] = { -0.44442259827515235, 0.7697625202443363, -0.7697625202443363, -0.0, 1.316676007399465, -0.9310305334577905, 0.6583380036997325, 0.0 };
static const double t_ninf[] = { -0.0, 0.5, -0.5, -0.0, 1.5, -0.0, 0.0, 0.0 };
static const double t_nminf[] = { -0.0, 0.0, -0.0, -0.0, 0.0, -0.0, 0.0, 0.0 };
static const double t_n0[] = { 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 };
static const double ndy[] = { -1.0, 1.5 };
static const double t_n2zero[] = { -0.0, -0.0, -0.0, -0.0, 0.5, 1.0, 0.0, -1.0 };

/* ---- unary -------------------------------------------------------------- */

typedef void (*unary_fwd)(amp_dtype t, size_t n, const void *x, void *y);
typedef void (*unary_bw)(const amp_kernel_table *k, amp_dtype t, size_t n, const void *x, const void *y,
                         const void *dy, void *dx);
typedef struct {
    const char *name;
    unary_fwd fwd;
    unary_bw bw;
} unary_op_info;

#define UNARY_FNS(op, X, T, CT)                                                                   \
    static void fwd_##op(amp_dtype t, size_t n, const void *x, void *y)                           \
    {                                                                                             \
        KCALL(&amp_ref_kernel_table, t, op, n, x, y);                                             \
    }                                                                                             \
    static void bw_##op(const amp_kernel_table *k, amp_dtype t, size_t n, const void *x,          \
                        const void *y, const void *dy, void *dx)                                  \
    {                                                                                             \
        KCALL(k, t, op##_backward, n, x, y, dy, dx);                                              \
    }
AMP_UNARY_BACKWARD_OPS(UNARY_FNS, ~, ~, ~)
#define UNARY_INFO(op, X, T, CT) { #op, fwd_##op, bw_##op },
static const unary_op_info unary_ops[] = { AMP_UNARY_BACKWARD_OPS(UNARY_INFO, ~, ~, ~) };
#define NUNARY (sizeof unary_ops / sizeof unary_ops[0])

static void unary_forward(const bw_case *c, double *const *in, double *y)
{
    ((const unary_op_info *)c->ctx)->fwd(AMP_F64, c->size[0], in[0], y);
}
static void unary_prepare(const bw_case *c, amp_dtype t, void *const *in)
{
    ((const unary_op_info *)c->ctx)->fwd(t, c->size[0], in[0], in[1]);
}
static void unary_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in,
                           const void *dy, void *const *grads)
{
    ((const unary_op_info *)c->ctx)->bw(k, t, c->size[0], in[0], in[1], dy, grads[0]);
}

/* A smooth, well-conditioned domain per op (away from kinks). */
static void unary_domain(const char *name, double *lo, double *hi)
{
    static const struct {
        const char *name;
        double lo, hi;
    } domains[] = { { "log", 0.5, 3 },    { "sqrt", 0.5, 3 },    { "rsqrt", 0.5, 3 },  { "reciprocal", 0.5, 3 },
                    { "acos", -0.8, 0.8 }, { "asin", -0.8, 0.8 }, { "tan", -1, 1 },      { "erfinv", -0.8, 0.8 },
                    { "log10", 0.5, 3 },  { "log2", 0.5, 3 },    { "log1p", -0.5, 2 } };
    *lo = -3;
    *hi = 3;
    for (size_t i = 0; i < sizeof domains / sizeof domains[0]; i++)
        if (strcmp(domains[i].name, name) == 0) {
            *lo = domains[i].lo;
            *hi = domains[i].hi;
        }
}

static void test_unary_backward(void **state)
{
    static const size_t sizes[] = { 37, 1, 0 };
    (void)state;
    for (size_t o = 0; o < NUNARY; o++)
        for (size_t s = 0; s < 3; s++) {
            bw_case c;
            memset(&c, 0, sizeof c);
            c.what = unary_ops[o].name;
            c.nprimary = 1;
            c.nin = 2;
            c.size[0] = c.size[1] = c.nout = sizes[s];
            unary_domain(c.what, &c.lo[0], &c.hi[0]);
            c.ngrad = 1;
            c.cond = 32;
            c.fd_h = 1e-6;
            c.fd_tol = 1e-7;
            c.ctx = &unary_ops[o];
            c.forward = unary_forward;
            c.prepare = unary_prepare;
            c.backward = unary_backward;
            bw_check(&c);
        }
}

/* The f64 kernel on PyTorch's inputs, against PyTorch's gradients. */
static void expect_unary_torch(const char *name, size_t n, const double *x, const double *dy, const double *torch)
{
    double y[16], dx[16];
    for (size_t o = 0; o < NUNARY; o++)
        if (strcmp(unary_ops[o].name, name) == 0) {
            unary_ops[o].fwd(AMP_F64, n, x, y);
            unary_ops[o].bw(&public_table, AMP_F64, n, x, y, dy, dx);
            bw_expect_torch(name, dx, torch, n, 1e-13);
            return;
        }
    fail_msg("no op %s", name);
}

static void test_unary_torch(void **state)
{
    (void)state;
#define UX(op) expect_unary_torch(#op, 7, ux, udy, t_##op)
    UX(relu); UX(abs); UX(gelu); UX(gelu_tanh); UX(silu); UX(hardswish); UX(sigmoid); UX(tanh); UX(exp); UX(sinh); UX(cosh); UX(expm1);
#define UP(op) expect_unary_torch(#op, 5, upx, updy, t_##op)
    UP(log); UP(sqrt); UP(rsqrt); UP(reciprocal); UP(log10); UP(log2); UP(log1p);
#define UU(op) expect_unary_torch(#op, 5, uux, uudy, t_##op)
    UU(acos); UU(asin); UU(tan); UU(erfinv);
    expect_unary_torch("hardswish", 5, hsx, hsdy, t_hardswish_edges);
    UX(hardsigmoid); UX(selu); UX(mish); UX(softsign); UX(logsigmoid);
#define UE(op) expect_unary_torch(#op, 6, ex, edy, t_##op##_edges)
    UE(hardsigmoid); UE(selu); UE(mish); UE(softsign); UE(logsigmoid);
    UX(sin); UX(cos); UX(atan); UX(erf); UX(erfc); UX(sign); UX(floor); UX(ceil); UX(round); UX(trunc); UX(frac);
}

/* ---- unary with parameters ------------------------------------------------ */

typedef struct {
    const char *name;
    int op; /* 0 softplus, 1 clamp, 2 pow_scalar, 3 rpow_scalar, 4 hardtanh, 5 leaky_relu, 6 elu */
    double p0, p1, lo, hi;
} param_info;

static const param_info param_ops[] = {
    { "softplus beta 2 threshold 3", 0, 2, 3, -2, 2 }, { "softplus beta 1 threshold 20", 0, 1, 20, -4, 4 },
    { "clamp -0.5 0.75", 1, -0.5, 0.75, -1, 1 },     { "clamp min only", 1, -0.25, INFINITY, -1, 1 },
    { "pow_scalar 2.5", 2, 2.5, 0, 0.5, 2 },         { "pow_scalar 3", 2, 3, 0, -2, 2 },
    { "pow_scalar -0.5", 2, -0.5, 0, 0.5, 2 },       { "pow_scalar 0", 2, 0, 0, -2, 2 },
    { "pow_scalar -1", 2, -1, 0, 0.5, 2 },           { "rpow_scalar 2.5", 3, 2.5, 0, -1, 1 },
    { "hardtanh -1 1", 4, -1, 1, -2, 2 },            { "relu6", 4, 0, 6, -2, 8 },
    { "leaky_relu 0.01", 5, 0.01, 0, -2, 2 },        { "leaky_relu -0.5", 5, -0.5, 0, -2, 2 },
    { "elu 1", 6, 1, 1, -3, 2 },                     { "celu 2", 6, 2, 0.5, -3, 2 },
};

static void param_call_fwd(const param_info *p, amp_dtype t, size_t n, const void *x, void *y)
{
    const amp_kernel_table *k = &amp_ref_kernel_table;
    switch (p->op) {
    case 0: KCALL(k, t, softplus, n, x, p->p0, p->p1, y); break;
    case 1: KCALL(k, t, clamp, n, x, p->p0, p->p1, y); break;
    case 2: KCALL(k, t, pow_scalar, n, x, p->p0, p->p1, y); break;
    case 4: KCALL(k, t, hardtanh, n, x, p->p0, p->p1, y); break;
    case 5: KCALL(k, t, leaky_relu, n, x, p->p0, p->p1, y); break;
    case 6: KCALL(k, t, elu, n, x, p->p0, p->p1, y); break;
    default: KCALL(k, t, rpow_scalar, n, x, p->p0, p->p1, y); break;
    }
}

static void param_call_bw(const param_info *p, const amp_kernel_table *k, amp_dtype t, size_t n, const void *x,
                          const void *y, const void *dy, void *dx)
{
    switch (p->op) {
    case 0: KCALL(k, t, softplus_backward, n, x, y, dy, p->p0, p->p1, dx); break;
    case 1: KCALL(k, t, clamp_backward, n, x, y, dy, p->p0, p->p1, dx); break;
    case 2: KCALL(k, t, pow_scalar_backward, n, x, y, dy, p->p0, p->p1, dx); break;
    case 4: KCALL(k, t, hardtanh_backward, n, x, y, dy, p->p0, p->p1, dx); break;
    case 5: KCALL(k, t, leaky_relu_backward, n, x, y, dy, p->p0, p->p1, dx); break;
    case 6: KCALL(k, t, elu_backward, n, x, y, dy, p->p0, p->p1, dx); break;
    default: KCALL(k, t, rpow_scalar_backward, n, x, y, dy, p->p0, p->p1, dx); break;
    }
}

static void param_forward(const bw_case *c, double *const *in, double *y)
{
    param_call_fwd(c->ctx, AMP_F64, c->size[0], in[0], y);
}
static void param_prepare(const bw_case *c, amp_dtype t, void *const *in)
{
    param_call_fwd(c->ctx, t, c->size[0], in[0], in[1]);
}
static void param_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in,
                           const void *dy, void *const *grads)
{
    param_call_bw(c->ctx, k, t, c->size[0], in[0], in[1], dy, grads[0]);
}

static void test_param_backward(void **state)
{
    (void)state;
    for (size_t o = 0; o < sizeof param_ops / sizeof param_ops[0]; o++) {
        bw_case c;
        memset(&c, 0, sizeof c);
        c.what = param_ops[o].name;
        c.nprimary = 1;
        c.nin = 2;
        c.size[0] = c.size[1] = c.nout = 41;
        c.lo[0] = param_ops[o].lo;
        c.hi[0] = param_ops[o].hi;
        c.ngrad = 1;
        c.cond = 32;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-7;
        c.ctx = &param_ops[o];
        c.forward = param_forward;
        c.prepare = param_prepare;
        c.backward = param_backward;
        bw_check(&c);
    }
}

static void test_param_torch(void **state)
{
    static const struct {
        const char *name;
        param_info p;
        const double *torch;
    } cases[] = {
        { "softplus", { "", 0, 2, 3, 0, 0 }, t_softplus },  { "clamp", { "", 1, -0.5, 1.5, 0, 0 }, t_clamp },
        { "pow 2.5", { "", 2, 2.5, 0, 0, 0 }, t_pow25 },    { "pow 3", { "", 2, 3, 0, 0, 0 }, t_pow3 },
        { "pow 0", { "", 2, 0, 0, 0, 0 }, t_pow0 },         { "pow -0.5", { "", 2, -0.5, 0, 0, 0 }, t_powm05 },
        { "rpow 2.5", { "", 3, 2.5, 0, 0, 0 }, t_rpow },    { "rpow 0", { "", 3, 0, 0, 0, 0 }, t_rpow0 },
        { "hardtanh", { "", 4, -0.5, 1.5, 0, 0 }, t_hardtanh }, { "hardtanh defaults", { "", 4, -1, 1, 0, 0 }, t_hardtanh_def },
        { "relu6", { "", 4, 0, 6, 0, 0 }, t_relu6 },          { "leaky_relu", { "", 5, 0.2, 0, 0, 0 }, t_leaky_relu },
        { "leaky_relu default", { "", 5, 0.01, 0, 0, 0 }, t_leaky_def },
        { "elu", { "", 6, 1.5, 1, 0, 0 }, t_elu },            { "celu", { "", 6, 2, 0.5, 0, 0 }, t_celu },
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double y[7], dx[7];
        param_call_fwd(&cases[i].p, AMP_F64, 7, px, y);
        param_call_bw(&cases[i].p, &public_table, AMP_F64, 7, px, y, pdy, dx);
        bw_expect_torch(cases[i].name, dx, cases[i].torch, 7, 1e-13);
    }
    {
        /* relu6's bounds get 0, -0 included */
        const param_info relu6 = { "", 4, 0, 6, 0, 0 };
        static const double ones[] = { 1.0, 1.0, 1.0, 1.0, 1.0 };
        double y[5], dx[5];
        param_call_fwd(&relu6, AMP_F64, 5, r6x, y);
        param_call_bw(&relu6, &public_table, AMP_F64, 5, r6x, y, ones, dx);
        bw_expect_torch("relu6 edges", dx, t_relu6_edges, 5, 1e-13);
    }
}

/* ---- binary ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    int op; /* 0 maximum, 1 atan2, 2 pow */
    double lo[2], hi[2];
} binary_info;

static const binary_info binary_ops[] = {
    { "maximum", 0, { -2, -2 }, { 2, 2 } },
    { "atan2", 1, { 0.5, -2 }, { 2, 2 } },
    { "pow", 2, { 0.5, -1.5 }, { 2, 1.5 } },
};

static void binary_call_bw(int op, const amp_kernel_table *k, amp_dtype t, int ndim, const int64_t *shape,
                           const void *a, const int64_t *as, const void *b, const int64_t *bs, const void *dy, void *da,
                           void *db)
{
    switch (op) {
    case 0: KCALL(k, t, maximum_backward, ndim, shape, a, as, b, bs, dy, da, db); break;
    case 1: KCALL(k, t, atan2_backward, ndim, shape, a, as, b, bs, dy, da, db); break;
    default: KCALL(k, t, pow_backward, ndim, shape, a, as, b, bs, dy, da, db); break;
    }
}

static void binary_forward(const bw_case *c, double *const *in, double *y)
{
    const binary_info *b = c->ctx;
    size_t n = c->size[0];
    switch (b->op) {
    case 0: amp_ref_maximum_f64(n, in[0], in[1], y); break;
    case 1: amp_ref_atan2_f64(n, in[0], in[1], y); break;
    default: amp_ref_pow_f64(n, in[0], in[1], y); break;
    }
}

static void binary_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in,
                            const void *dy, void *const *grads)
{
    int64_t shape[2] = { 3, (int64_t)c->size[0] / 3 }, stride[2] = { shape[1], 1 };
    binary_call_bw(((const binary_info *)c->ctx)->op, k, t, 2, shape, in[0], stride, in[1], stride, dy, grads[0],
                   grads[1]);
}

static void test_binary_backward(void **state)
{
    (void)state;
    for (size_t o = 0; o < 3; o++) {
        bw_case c;
        memset(&c, 0, sizeof c);
        c.what = binary_ops[o].name;
        c.nprimary = c.nin = 2;
        c.size[0] = c.size[1] = c.nout = 24;
        for (int i = 0; i < 2; i++) {
            c.lo[i] = binary_ops[o].lo[i];
            c.hi[i] = binary_ops[o].hi[i];
        }
        c.ngrad = 2;
        c.grad_of[0] = 0;
        c.grad_of[1] = 1;
        c.cond = 32;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-7;
        c.ctx = &binary_ops[o];
        c.forward = binary_forward;
        c.backward = binary_backward;
        bw_check(&c);
    }
}

/* Broadcast operands (a [3, 1] and b [4] against the output [3, 4]) give
 * exactly what explicitly expanded operands give. */
static void test_binary_broadcast(void **state)
{
    (void)state;
    for (int d = 0; d < NDTYPES; d++)
        for (int op = 0; op < 3; op++) {
            amp_dtype t = dtypes[d];
            int64_t shape[2] = { 3, 4 }, as[2] = { 1, 0 }, bs[2] = { 0, 1 }, full[2] = { 4, 1 };
            tensor a = tensor_random(t, 3, 0.5, 2), b = tensor_random(t, 4, -1, 1), dy = tensor_random(t, 12, -1, 1);
            tensor ae = tensor_new(t, 12), be = tensor_new(t, 12);
            tensor da = tensor_new(t, 12), db = tensor_new(t, 12), dae = tensor_new(t, 12), dbe = tensor_new(t, 12);
            for (size_t i = 0; i < 12; i++) {
                set(&ae, i, get(&a, i / 4));
                set(&be, i, get(&b, i % 4));
            }
            binary_call_bw(op, &public_table, t, 2, shape, a.data, as, b.data, bs, dy.data, da.data, db.data);
            binary_call_bw(op, &amp_ref_kernel_table, t, 2, shape, ae.data, full, be.data, full, dy.data, dae.data,
                           dbe.data);
            assert_memory_equal(da.data, dae.data, 12 * amp_dtype_size(t));
            assert_memory_equal(db.data, dbe.data, 12 * amp_dtype_size(t));
            tensor_free(&a);
            tensor_free(&b);
            tensor_free(&dy);
            tensor_free(&ae);
            tensor_free(&be);
            tensor_free(&da);
            tensor_free(&db);
            tensor_free(&dae);
            tensor_free(&dbe);
        }
}

static void test_binary_torch(void **state)
{
    int64_t shape[1] = { 7 }, stride[1] = { 1 };
    double da[7], db[7];
    (void)state;
    binary_call_bw(0, &public_table, AMP_F64, 1, shape, ba, stride, bb, stride, bdy, da, db);
    bw_expect_torch("maximum da (ties split, NaN)", da, t_max_da, 7, 0);
    bw_expect_torch("maximum db", db, t_max_db, 7, 0);
    binary_call_bw(1, &public_table, AMP_F64, 1, shape, ba2, stride, bb2, stride, bdy, da, db);
    bw_expect_torch("atan2 da", da, t_atan2_da, 7, 1e-13);
    bw_expect_torch("atan2 db", db, t_atan2_db, 7, 1e-13);
    binary_call_bw(2, &public_table, AMP_F64, 1, shape, ba2, stride, bb2, stride, bdy, da, db);
    bw_expect_torch("pow da", da, t_pow_da, 7, 1e-13);
    bw_expect_torch("pow db", db, t_pow_db, 7, 1e-13);
}

/* ---- softmax, log_softmax, reverse_cumsum ------------------------------------ */

typedef struct {
    const char *name;
    int op; /* 0 softmax, 1 log_softmax, 2 reverse_cumsum (the adjoint of cumsum) */
    int64_t outer, dim, inner;
} axis_info;

static void axis_forward(const bw_case *c, double *const *in, double *y)
{
    const axis_info *a = c->ctx;
    if (a->op == 0)
        amp_ref_softmax_f64(a->outer, a->dim, a->inner, in[0], y);
    else if (a->op == 1)
        amp_ref_log_softmax_f64(a->outer, a->dim, a->inner, in[0], y);
    else
        amp_ref_cumsum_f64(a->outer, a->dim, a->inner, in[0], y);
}

static void axis_prepare(const bw_case *c, amp_dtype t, void *const *in)
{
    const axis_info *a = c->ctx;
    if (a->op == 0)
        KCALL(&amp_ref_kernel_table, t, softmax, a->outer, a->dim, a->inner, in[0], in[1]);
    else if (a->op == 1)
        KCALL(&amp_ref_kernel_table, t, log_softmax, a->outer, a->dim, a->inner, in[0], in[1]);
}

static void axis_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in,
                          const void *dy, void *const *grads)
{
    const axis_info *a = c->ctx;
    if (a->op == 0)
        KCALL(k, t, softmax_backward, a->outer, a->dim, a->inner, in[1], dy, grads[0]);
    else if (a->op == 1)
        KCALL(k, t, log_softmax_backward, a->outer, a->dim, a->inner, in[1], dy, grads[0]);
    else
        KCALL(k, t, reverse_cumsum, a->outer, a->dim, a->inner, dy, grads[0]);
}

static void test_axis_backward(void **state)
{
    static const axis_info cases[] = {
        { "softmax", 0, 2, 5, 3 },     { "softmax long", 0, 1, 300, 1 }, { "log_softmax", 1, 2, 5, 3 },
        { "log_softmax long", 1, 1, 300, 1 }, { "reverse_cumsum", 2, 2, 5, 3 }, { "reverse_cumsum long", 2, 1, 300, 2 },
        { "softmax empty", 0, 0, 4, 2 },
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bw_case c;
        const axis_info *a = &cases[i];
        memset(&c, 0, sizeof c);
        c.what = a->name;
        c.nprimary = 1;
        c.nin = a->op == 2 ? 1 : 2;
        c.size[0] = c.size[1] = c.nout = (size_t)(a->outer * a->dim * a->inner);
        c.lo[0] = -3;
        c.hi[0] = 3;
        c.ngrad = 1;
        c.cond = 4.0 * (double)a->dim + 16;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-7;
        c.ctx = a;
        c.forward = axis_forward;
        c.prepare = a->op == 2 ? NULL : axis_prepare;
        c.backward = axis_backward;
        bw_check(&c);
    }
}

/* ---- logsumexp, norm --------------------------------------------------------- */

typedef struct {
    const char *name;
    int op; /* 0 logsumexp, 1 norm */
    double p;
    int ndim;
    int64_t shape[3];
    uint8_t reduce[3];
} red_info;

static void red_forward(const bw_case *c, double *const *in, double *y)
{
    const red_info *r = c->ctx;
    if (r->op == 0)
        amp_ref_logsumexp_f64(r->ndim, r->shape, r->reduce, in[0], y);
    else
        amp_ref_norm_f64(r->ndim, r->shape, r->reduce, r->p, in[0], y);
}

static void red_prepare(const bw_case *c, amp_dtype t, void *const *in)
{
    const red_info *r = c->ctx;
    if (r->op == 0)
        KCALL(&amp_ref_kernel_table, t, logsumexp, r->ndim, r->shape, r->reduce, in[0], in[1]);
    else
        KCALL(&amp_ref_kernel_table, t, norm, r->ndim, r->shape, r->reduce, r->p, in[0], in[1]);
}

static void red_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                         void *const *grads)
{
    const red_info *r = c->ctx;
    if (r->op == 0)
        KCALL(k, t, logsumexp_backward, r->ndim, r->shape, r->reduce, in[0], in[1], dy, grads[0]);
    else
        KCALL(k, t, norm_backward, r->ndim, r->shape, r->reduce, r->p, in[0], in[1], dy, grads[0]);
}

static void test_reduction_backward(void **state)
{
    static const red_info cases[] = {
        { "logsumexp dims 1,2", 0, 0, 3, { 2, 3, 4 }, { 0, 1, 1 } },
        { "logsumexp dim 0", 0, 0, 3, { 2, 3, 4 }, { 1, 0, 0 } },
        { "logsumexp all", 0, 0, 2, { 5, 7 }, { 1, 1 } },
        { "norm 2", 1, 2, 3, { 2, 3, 4 }, { 0, 1, 1 } },
        { "norm 1", 1, 1, 3, { 2, 3, 4 }, { 0, 0, 1 } },
        { "norm 3", 1, 3, 3, { 2, 3, 4 }, { 1, 0, 1 } },
        { "norm 1.5", 1, 1.5, 2, { 4, 6 }, { 0, 1 } },
        { "norm 0.5", 1, 0.5, 2, { 4, 6 }, { 0, 1 } },
        { "norm inf", 1, INFINITY, 2, { 4, 6 }, { 0, 1 } },
        { "norm -inf", 1, -INFINITY, 2, { 4, 6 }, { 1, 0 } },
        { "norm 0", 1, 0, 2, { 4, 6 }, { 0, 1 } },
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const red_info *r = &cases[i];
        bw_case c;
        size_t n = 1, kept = 1;
        memset(&c, 0, sizeof c);
        for (int d = 0; d < r->ndim; d++) {
            n *= (size_t)r->shape[d];
            kept *= r->reduce[d] ? 1 : (size_t)r->shape[d];
        }
        c.what = r->name;
        c.nprimary = 1;
        c.nin = 2;
        c.size[0] = n;
        c.size[1] = c.nout = kept;
        /* away from 0, where |x| has its kink */
        c.lo[0] = r->op == 1 && r->p != 2 ? 0.25 : -3;
        c.hi[0] = 3;
        c.ngrad = 1;
        c.cond = 4.0 * (double)(n / kept) + 32;
        c.fd_h = 1e-6;
        c.fd_tol = 1e-7;
        c.ctx = r;
        c.forward = red_forward;
        c.prepare = red_prepare;
        c.backward = red_backward;
        bw_check(&c);
    }
}

static void test_axis_reduction_torch(void **state)
{
    int64_t shape[2] = { 2, 4 };
    uint8_t reduce[2] = { 0, 1 };
    double y[8], dx[8];
    static const struct {
        const char *name;
        double p;
        const double *torch;
    } norms[] = { { "norm 1", 1, t_n1 },      { "norm 2", 2, t_n2 },       { "norm 3", 3, t_n3 },
                  { "norm 0.5", 0.5, t_n05 }, { "norm 1.5", 1.5, t_n15 }, { "norm inf (ties)", INFINITY, t_ninf },
                  { "norm -inf (ties)", -INFINITY, t_nminf }, { "norm 0", 0, t_n0 } };
    static const double zero_row[8] = { 0, 0, 0, 0, 1, 2, 0, -2 };
    (void)state;
    amp_ref_softmax_f64(2, 4, 1, sx, y);
    amp_softmax_backward_f64(2, 4, 1, y, sdy_softmax, dx);
    bw_expect_torch("softmax", dx, t_softmax, 8, 1e-13);
    amp_ref_log_softmax_f64(2, 4, 1, sx, y);
    amp_log_softmax_backward_f64(2, 4, 1, y, sdy_log_softmax, dx);
    bw_expect_torch("log_softmax", dx, t_log_softmax, 8, 1e-13);
    amp_reverse_cumsum_f64(2, 4, 1, sdy_cumsum, dx);
    bw_expect_torch("reverse_cumsum", dx, t_cumsum, 8, 1e-13);
    amp_ref_logsumexp_f64(2, shape, reduce, sx, y);
    amp_logsumexp_backward_f64(2, shape, reduce, sx, y, sdy_lse, dx);
    bw_expect_torch("logsumexp", dx, t_lse, 8, 1e-13);
    for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++) {
        amp_ref_norm_f64(2, shape, reduce, norms[i].p, nx, y);
        amp_norm_backward_f64(2, shape, reduce, norms[i].p, nx, y, ndy, dx);
        bw_expect_torch(norms[i].name, dx, norms[i].torch, 8, 1e-13);
    }
    amp_ref_norm_f64(2, shape, reduce, 2, zero_row, y);
    amp_norm_backward_f64(2, shape, reduce, 2, zero_row, y, ndy, dx);
    bw_expect_torch("norm 2 of zeros", dx, t_n2zero, 8, 1e-13);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_backward),     cmocka_unit_test(test_unary_torch),
        cmocka_unit_test(test_param_backward),     cmocka_unit_test(test_param_torch),
        cmocka_unit_test(test_binary_backward),    cmocka_unit_test(test_binary_broadcast),
        cmocka_unit_test(test_binary_torch),       cmocka_unit_test(test_axis_backward),
        cmocka_unit_test(test_reduction_backward), cmocka_unit_test(test_axis_reduction_torch),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
