/*
 * test_backward_loss.c - the loss gradient kernels of amprt/backward.h: the
 * pointwise losses (every reduction, with and without weight), nll_loss,
 * cross_entropy (class targets: weight, ignore_index, label_smoothing) and
 * cross_entropy_prob. Every dtype through the public and the reference
 * table, as backward_test_util.h describes (f32/bf16/f16 against the f64
 * kernel on the same rounded inputs; f64 against finite differences of the
 * forward f64 loss kernels), and fixed cases whose gradients PyTorch 1.13
 * autograd printed in float64 (dloss 0.75 for the reduced ones).
 */
#define _POSIX_C_SOURCE 200809L

#include "backward_test_util.h"

/* ---- PyTorch's numbers ---------------------------------------------------- */
static const double lx[] = { 0.2, -1.0, 0.5, 1.5, 0.9, -0.3 };
static const double lt[] = { 0.3, -1.0, 0.0, 0.7, 0.9, 1.0 };
static const double lw[] = { 1.0, 0.5, 2.0, 1.5, 0.25, 1.0 };
static const double lxp[] = { 0.2, 0.01, 0.5, 0.99, 0.9, 0.7 };
static const double ltp[] = { 0.3, 0.0, 1.0, 1.0, 0.9, 0.5 };
static const double lts[] = { 1.0, -1.0, -1.0, 1.0, -1.0, 1.0 };
static const double lxh[] = { 0.2, 1.0, 0.5, 1.5, 2.0, -0.3 };
static const double ldy[] = { -1.0, -0.5, 0.0, 0.5, 1.0, 1.5 };
static const double lt2[] = { 0.3, 2.0, 0.0, 3.5, 0.9, 1.0 };
static const double t_mse_none[] = { 0.19999999999999996, -0.0, 0.0, 0.8, 0.0, -3.9000000000000004 };
static const double t_mse_mean[] = { -0.024999999999999994, 0.0, 0.125, 0.2, 0.0, -0.325 };
static const double t_mse_sum[] = { -0.14999999999999997, 0.0, 0.75, 1.2000000000000002, 0.0, -1.9500000000000002 };
static const double t_mse_sum_w[] = { -0.14999999999999997, 0.0, 1.5, 1.8, 0.0, -1.9500000000000002 };
static const double t_l1_none[] = { 1.0, -0.0, 0.0, 0.5, 0.0, -1.5 };
static const double t_l1_mean[] = { -0.125, 0.0, 0.125, 0.125, 0.0, -0.125 };
static const double t_l1_sum[] = { -0.75, 0.0, 0.75, 0.75, 0.0, -0.75 };
static const double t_l1_sum_w[] = { -0.75, 0.0, 1.5, 1.125, 0.0, -0.75 };
static const double t_sl1_none[] = { 0.19999999999999996, -0.0, 0.0, 0.5, 0.0, -1.5 };
static const double t_sl1_mean[] = { -0.024999999999999994, 0.0, 0.125, 0.125, 0.0, -0.125 };
static const double t_sl1_sum[] = { -0.14999999999999997, 0.0, 0.75, 0.75, 0.0, -0.75 };
static const double t_sl1_sum_w[] = { -0.14999999999999997, 0.0, 1.5, 1.125, 0.0, -0.75 };
static const double t_sl1b0_none[] = { 1.0, 0.5, 0.0, 0.5, -1.0, -1.5 };
static const double t_sl1b0_mean[] = { -0.125, -0.125, 0.125, 0.125, -0.125, -0.125 };
static const double t_sl1b0_sum[] = { -0.75, -0.75, 0.75, 0.75, -0.75, -0.75 };
static const double t_sl1b0_sum_w[] = { -0.75, -0.375, 1.5, 1.125, -0.1875, -0.75 };
static const double t_huber_none[] = { 0.09999999999999998, -0.0, 0.0, 0.2, 0.0, -0.6000000000000001 };
static const double t_huber_mean[] = { -0.012499999999999997, 0.0, 0.05, 0.05, 0.0, -0.05 };
static const double t_huber_sum[] = { -0.07499999999999998, 0.0, 0.30000000000000004, 0.30000000000000004, 0.0, -0.30000000000000004 };
static const double t_huber_sum_w[] = { -0.07499999999999998, 0.0, 0.6000000000000001, 0.45, 0.0, -0.30000000000000004 };
static const double t_kl_none[] = { 0.3, 0.0, -0.0, -0.5, -0.9, -0.75 };
static const double t_kl_mean[] = { -0.0375, -0.0, -0.125, -0.125, -0.1125, -0.0625 };
static const double t_kl_sum[] = { -0.22499999999999998, -0.0, -0.75, -0.75, -0.675, -0.375 };
static const double t_kl_sum_w[] = { -0.22499999999999998, -0.0, -1.5, -1.125, -0.16875, -0.375 };
static const double t_kllog_none[] = { 1.3498588075760032, 0.18393972058572117, -0.0, -1.0068763537352383, -2.45960311115695, -4.077422742688568 };
static const double t_kllog_mean[] = { -0.1687323509470004, -0.04598493014643029, -0.125, -0.2517190884338096, -0.30745038889461873, -0.33978522855738064 };
static const double t_kllog_sum[] = { -1.0123941056820023, -0.27590958087858175, -0.75, -1.5103145306028574, -1.8447023333677124, -2.038711371344284 };
static const double t_kllog_sum_w[] = { -1.0123941056820023, -0.13795479043929088, -1.5, -2.2654717959042863, -0.4611755833419281, -2.038711371344284 };
static const double t_bce_none[] = { 0.6249999999999998, -0.505050505050505, -0.0, -0.505050505050505, 0.0, 1.4285714285714282 };
static const double t_bce_mean[] = { -0.07812499999999997, 0.12626262626262624, -0.25, -0.12626262626262624, 0.0, 0.11904761904761901 };
static const double t_bce_sum[] = { -0.4687499999999998, 0.7575757575757575, -1.5, -0.7575757575757576, 0.0, 0.7142857142857141 };
static const double t_bce_sum_w[] = { -0.4687499999999998, 0.37878787878787873, -3.0, -1.1363636363636362, 0.0, 0.7142857142857141 };
static const double t_bcel_none[] = { -0.24983399731247796, -0.13447071068499755, -0.0, -0.09121276190317817, -0.18905049737499613, -0.11166377521748846 };
static const double t_bcel_mean[] = { 0.031229249664059745, 0.03361767767124939, -0.047192583599768176, -0.022803190475794544, -0.023631312171874516, -0.009305314601457372 };
static const double t_bcel_sum[] = { 0.18737549798435849, 0.20170606602749633, -0.283155501598609, -0.13681914285476726, -0.1417878730312471, -0.05583188760874423 };
static const double t_bcel_sum_w[] = { 0.18737549798435849, 0.10085303301374816, -0.566311003197218, -0.2052287142821509, -0.035446968257811774, -0.05583188760874423 };
static const double t_soft_none[] = { 0.4501660026875221, -0.13447071068499755, 0.0, -0.09121276190317816, 0.710949502625004, -0.8616637752174885 };
static const double t_soft_mean[] = { -0.05627075033594026, 0.03361767767124939, 0.07780741640023182, -0.02280319047579454, 0.0888686878281255, -0.07180531460145738 };
static const double t_soft_sum[] = { -0.3376245020156416, 0.20170606602749633, 0.466844498401391, -0.13681914285476723, 0.533212126968753, -0.43083188760874425 };
static const double t_soft_sum_w[] = { -0.3376245020156416, 0.10085303301374816, 0.933688996802782, -0.20522871428215086, 0.13330303174218824, -0.43083188760874425 };
static const double t_hinge_none[] = { -1.0, 0.5, 0.0, 0.5, 0.0, 1.5 };
static const double t_hinge_mean[] = { 0.125, -0.125, -0.125, 0.125, 0.0, 0.125 };
static const double t_hinge_sum[] = { 0.75, -0.75, -0.75, 0.75, 0.0, 0.75 };
static const double t_hinge_sum_w[] = { 0.75, -0.375, -1.5, 1.125, 0.0, 0.75 };
static const double t_pois_none[] = { -0.9214027581601698, -0.18393972058572117, 0.0, 1.7408445351690323, 1.55960311115695, 0.36122733102257687 };
static const double t_pois_mean[] = { 0.11517534477002123, 0.04598493014643029, 0.08109015883751602, 0.43521113379225806, 0.19495038889461874, 0.030102277585214735 };
static const double t_pois_sum[] = { 0.6910520686201275, 0.27590958087858175, 0.48654095302509615, 2.6112668027535486, 1.1697023333677123, 0.18061366551128843 };
static const double t_pois_sum_w[] = { 0.6910520686201275, 0.13795479043929088, 0.9730819060501923, 3.9169002041303225, 0.2924255833419281, 0.18061366551128843 };
static const double t_poisf_none[] = { 0.49999992500000356, 99.4999000001, 0.0, -1.267676749821447, 1.1111111031247844e-08, -0.6428571122448985 };
static const double t_poisf_mean[] = { -0.062499990625000446, -24.874975000025, 0.125, -0.31691918745536174, 1.3888888789059806e-09, -0.05357142602040821 };
static const double t_poisf_sum[] = { -0.3749999437500027, -149.24985000015, 0.75, -1.9015151247321702, 8.333333245680308e-09, -0.32142855612244925 };
static const double t_poisf_sum_w[] = { -0.3749999437500027, -74.624925000075, 1.5, -2.8522726870982553, 2.083333311420077e-09, -0.32142855612244925 };
static const double cx[] = { 0.5, -1.0, 2.0, 0.0, 3.0, 3.0, -2.0, 1.0, 0.1, 0.2, 0.3, -0.4 };
static const double cw[] = { 1.0, 0.5, 2.0, 1.5 };
static const int64_t ct[] = { 2, 0, 1 };
static const int64_t ct_ign[] = { 2, -100, 1 };
static const double t_ce_mean[] = { 0.039611177378744936, 0.008838448352187217, -0.07247501927845643, 0.024025393547524303, -0.1332906380271174, 0.11670936197288259, 0.0007863814952703637, 0.015794894558964417, 0.06356302265236338, -0.17975199589962437, 0.07763605118459398, 0.03855292206266702 };
static const double t_nll_ce_mean[] = { 0.0, 0.0, -0.25, 0.0, -0.25, 0.0, 0.0, 0.0, 0.0, -0.25, 0.0, 0.0 };
static const double t_ce_w_ls_mean[] = { 0.05209772412915269, 0.008658110958468301, -0.08278181628440949, 0.02202598119678854, -0.07710443136726282, 0.09968128291845149, -0.020720828082828106, -0.0018560234683605962, 0.024699398334888177, -0.05193325485836215, 0.021825799945702364, 0.005408056577771629 };
static const double t_ce_ign_w_ls_sum[] = { 0.21000454936225202, 0.04166703923388118, -0.36229323633308597, 0.11062164773695285, 0.0, 0.0, 0.0, 0.0, 0.09089621407532684, -0.22569719292685206, 0.09642218829342462, 0.03837879055810062 };
static const double t_ce_ign_none[] = { 0.10311967969454451, 0.01262649165026462, -0.14478631843852025, 0.029040147093711277, 0.0, 0.0, 0.0, 0.0, 0.21866553138370756, -0.3675615762178214, 0.15028909687064498, -0.0013930520365312985 };
static const double t_ce_ign_ls_mean[] = { 0.0312917660681174, -0.014867327471719174, -0.024337528917684644, 0.007913090321286452, 0.0, 0.0, 0.0, 0.0, 0.06721953397854508, -0.18525299384943653, 0.08832907677689097, 0.029704383094000534 };
static const double t_nll_ign_w_mean[] = { 0.0, 0.0, -0.6, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.15, 0.0, 0.0 };
static const double cpt[] = { 0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.0, 0.0, 0.25, 0.25, 0.25, 0.25 };
static const double t_cep_mean[] = { 0.014611177378744934, -0.04116155164781279, 0.10252498072154358, -0.0759746064524757, -0.008290638027117408, -0.008290638027117408, 0.0007863814952703637, 0.015794894558964417, 0.0010630226523633823, 0.007748004100375627, 0.015136051184593977, -0.02394707793733298 };
static const double t_cep_w_ls_sum[] = { 0.06530193902664169, -0.04242397727251055, 0.2946276707655442, -0.3175056325196752, -0.039891126969149385, 0.12885887303085064, -0.07299472718706058, -0.015973018874640733, 0.050861334946362684, 0.1696800153764086, -0.08386480805777259, -0.13667654226499867 };
static const double t_cep_ls_none[] = { 0.02172235475748988, -0.08482310329562556, 0.2075499614430872, -0.1444492129049514, 0.008162552108469667, 0.008162552108469667, 0.021854474018918546, -0.038179578235857665, 0.008504181218907059, 0.06198403280300502, 0.12108840947675181, -0.19157662349866383 };

static const int reductions[] = { AMP_REDUCTION_NONE, AMP_REDUCTION_MEAN, AMP_REDUCTION_SUM };

/* ---- pointwise losses ------------------------------------------------------- */

typedef void (*loss_fwd)(size_t n, const double *x, const double *t, const double *w, double p0, double p1, double p2,
                         int reduction, double *y);
typedef void (*loss_bw)(const amp_kernel_table *k, amp_dtype t, size_t n, const void *x, const void *tg,
                        const void *w, double p0, double p1, double p2, int reduction, const void *dloss, void *dx);

#define LOSS_FNS(op, X, T, CT)                                                                    \
    static void bw_##op(const amp_kernel_table *k, amp_dtype t, size_t n, const void *x,          \
                        const void *tg, const void *w, double p0, double p1, double p2,           \
                        int reduction, const void *dloss, void *dx)                               \
    {                                                                                             \
        KCALL(k, t, op##_backward, n, x, tg, w, p0, p1, p2, reduction, dloss, dx);                \
    }
AMP_POINTWISE_LOSSES(LOSS_FNS, ~, ~, ~)

typedef struct {
    const char *name;
    loss_fwd fwd;
    loss_bw bw;
    double p0, p1, p2;
    double xlo, xhi, tlo, thi;
    int sign_target; /* targets +-1 */
    int reduction, weighted;
} loss_info;

#define LOSS(op, p0, p1, p2, xlo, xhi, tlo, thi, sign) \
    { #op " " #p0 " " #p1, amp_ref_##op##_f64, bw_##op, p0, p1, p2, xlo, xhi, tlo, thi, sign, 0, 0 }
static const loss_info losses[] = {
    LOSS(mse_loss, 0, 0, 0, -2, 2, -2, 2, 0),
    LOSS(l1_loss, 0, 0, 0, -2, 2, -2, 2, 0),
    LOSS(smooth_l1_loss, 0.5, 0, 0, -2, 2, -2, 2, 0),
    LOSS(smooth_l1_loss, 0, 0, 0, -2, 2, -2, 2, 0),
    LOSS(huber_loss, 0.75, 0, 0, -2, 2, -2, 2, 0),
    LOSS(kl_div, 0, 0, 0, -2, 2, 0.1, 1, 0),
    LOSS(kl_div, 1, 0, 0, -2, 2, -2, 1, 0),
    LOSS(binary_cross_entropy, 0, 0, 0, 0.05, 0.95, 0, 1, 0),
    LOSS(binary_cross_entropy_with_logits, 0, 0, 0, -3, 3, 0, 1, 0),
    LOSS(soft_margin_loss, 0, 0, 0, -2, 2, 0, 0, 1),
    LOSS(hinge_embedding_loss, 1.5, 0, 0, -1, 1, 0, 0, 1),
    LOSS(poisson_nll_loss, 1, 0, 1e-8, -2, 2, 0, 4, 0),
    LOSS(poisson_nll_loss, 1, 1, 1e-8, -2, 2, 0, 4, 0),
    LOSS(poisson_nll_loss, 0, 1, 0.5, 0.5, 3, 0, 4, 0),
};
#define NLOSSES (sizeof losses / sizeof losses[0])

static void loss_forward(const bw_case *c, double *const *in, double *y)
{
    const loss_info *l = c->ctx;
    l->fwd(c->size[0], in[0], in[1], l->weighted ? in[2] : NULL, l->p0, l->p1, l->p2, l->reduction, y);
}

static void loss_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in, const void *dy,
                          void *const *grads)
{
    const loss_info *l = c->ctx;
    l->bw(k, t, c->size[0], in[0], in[1], l->weighted ? in[2] : NULL, l->p0, l->p1, l->p2, l->reduction, dy,
          grads[0]);
}

static void test_pointwise_backward(void **state)
{
    double signs[29];
    (void)state;
    for (size_t i = 0; i < 29; i++)
        signs[i] = (i * 7 + 3) % 5 < 2 ? -1.0 : 1.0;
    for (size_t o = 0; o < NLOSSES; o++)
        for (int r = 0; r < 3; r++)
            for (int weighted = 0; weighted < 2; weighted++) {
                loss_info l = losses[o];
                bw_case c;
                l.reduction = reductions[r];
                l.weighted = weighted;
                memset(&c, 0, sizeof c);
                c.what = l.name;
                c.nprimary = c.nin = 2 + weighted;
                c.size[0] = c.size[1] = c.size[2] = 29;
                c.nout = l.reduction == AMP_REDUCTION_NONE ? 29 : 1;
                c.lo[0] = l.xlo;
                c.hi[0] = l.xhi;
                c.lo[1] = l.tlo;
                c.hi[1] = l.thi;
                c.lo[2] = 0.25;
                c.hi[2] = 2;
                c.values[1] = l.sign_target ? signs : NULL;
                c.ngrad = 1;
                c.cond = 32;
                c.fd_h = 1e-6;
                c.fd_tol = 1e-7;
                c.ctx = &l;
                c.forward = loss_forward;
                c.backward = loss_backward;
                bw_check(&c);
            }
}

static void expect_loss_torch(const char *what, loss_bw bw, const double *x, const double *t, const double *w, double p0,
                              double p1, double p2, int reduction, const double *torch)
{
    double dx[6], dloss[6];
    for (int i = 0; i < 6; i++)
        dloss[i] = reduction == AMP_REDUCTION_NONE ? ldy[i] : 0.75;
    bw(&public_table, AMP_F64, 6, x, t, w, p0, p1, p2, reduction, dloss, dx);
    bw_expect_torch(what, dx, torch, 6, 1e-13);
}

static void test_pointwise_torch(void **state)
{
    (void)state;
#define LT(name, op, x, t, p0, p1, p2)                                                                  \
    expect_loss_torch(#name " none", bw_##op, x, t, NULL, p0, p1, p2, AMP_REDUCTION_NONE, t_##name##_none); \
    expect_loss_torch(#name " mean", bw_##op, x, t, NULL, p0, p1, p2, AMP_REDUCTION_MEAN, t_##name##_mean); \
    expect_loss_torch(#name " sum", bw_##op, x, t, NULL, p0, p1, p2, AMP_REDUCTION_SUM, t_##name##_sum);    \
    expect_loss_torch(#name " sum weighted", bw_##op, x, t, lw, p0, p1, p2, AMP_REDUCTION_SUM, t_##name##_sum_w)
    LT(mse, mse_loss, lx, lt, 0, 0, 0);
    LT(l1, l1_loss, lx, lt, 0, 0, 0);
    LT(sl1, smooth_l1_loss, lx, lt, 0.5, 0, 0);
    LT(sl1b0, smooth_l1_loss, lx, lt, 0, 0, 0);
    LT(huber, huber_loss, lx, lt, 0.4, 0, 0);
    LT(kl, kl_div, lx, ltp, 0, 0, 0);
    LT(kllog, kl_div, lx, lt, 1, 0, 0);
    LT(bce, binary_cross_entropy, lxp, ltp, 0, 0, 0);
    LT(bcel, binary_cross_entropy_with_logits, lx, ltp, 0, 0, 0);
    LT(soft, soft_margin_loss, lx, lts, 0, 0, 0);
    LT(hinge, hinge_embedding_loss, lxh, lts, 1, 0, 0);
    LT(pois, poisson_nll_loss, lx, ltp, 1, 0, 1e-8);
    LT(poisf, poisson_nll_loss, lxp, lt2, 0, 1, 1e-8);
}

/* ---- class losses ---------------------------------------------------------- */

typedef struct {
    const char *name;
    int op; /* 0 nll_loss, 1 cross_entropy, 2 cross_entropy_prob */
    int64_t N, C, inner;
    const int64_t *target;
    int weighted;
    double label_smoothing;
    int reduction;
} class_info;

static void class_forward(const bw_case *c, double *const *in, double *y)
{
    const class_info *l = c->ctx;
    const double *w = l->weighted ? in[1] : NULL;
    if (l->op == 0)
        assert_int_equal(amp_ref_nll_loss_nd_f64(l->N, l->C, l->inner, in[0], l->target, w, -100, l->reduction, y), 0);
    else if (l->op == 1)
        assert_int_equal(amp_ref_cross_entropy_f64(l->N, l->C, l->inner, in[0], l->target, w, -100,
                                                   l->label_smoothing, l->reduction, y),
                         0);
    else
        amp_ref_cross_entropy_prob_f64(l->N, l->C, l->inner, in[0], in[2], w, l->label_smoothing, l->reduction, y);
}

static void class_backward(const bw_case *c, const amp_kernel_table *k, amp_dtype t, void *const *in,
                           const void *dy, void *const *grads)
{
    const class_info *l = c->ctx;
    const void *w = l->weighted ? in[1] : NULL;
    if (l->op == 0)
        KCALL(k, t, nll_loss_backward, l->N, l->C, l->inner, l->target, w, -100, l->reduction, dy, grads[0]);
    else if (l->op == 1)
        KCALL(k, t, cross_entropy_backward, l->N, l->C, l->inner, in[0], l->target, w, -100, l->label_smoothing,
              l->reduction, dy, grads[0]);
    else
        KCALL(k, t, cross_entropy_prob_backward, l->N, l->C, l->inner, in[0], in[2], w, l->label_smoothing,
              l->reduction, dy, grads[0]);
}

static void test_class_backward(void **state)
{
    static const int64_t targets[] = { 2, -100, 0, 4, 1, 1, -100, 3, 0, 2, 4, 3 }; /* N * inner = 12 */
    static const struct {
        int64_t N, C, inner;
    } shapes[] = { { 4, 5, 3 }, { 12, 5, 1 } };
    (void)state;
    for (int op = 0; op < 3; op++)
        for (size_t s = 0; s < 2; s++)
            for (int r = 0; r < 3; r++)
                for (int variant = 0; variant < 3; variant++) { /* plain, weighted, weighted + smoothing */
                    class_info l = { "", op, shapes[s].N, shapes[s].C, shapes[s].inner, targets, variant > 0,
                                     variant == 2 && op != 0 ? 0.2 : 0.0, reductions[r] };
                    bw_case c;
                    size_t n = (size_t)(l.N * l.C * l.inner);
                    static const char *const names[] = { "nll_loss_backward", "cross_entropy_backward",
                                                          "cross_entropy_prob_backward" };
                    memset(&c, 0, sizeof c);
                    c.what = names[op];
                    c.nprimary = c.nin = op == 2 ? 3 : 2;
                    c.size[0] = n;
                    c.size[1] = (size_t)l.C;
                    c.size[2] = n;
                    c.lo[0] = -3;
                    c.hi[0] = 3;
                    c.lo[1] = 0.25;
                    c.hi[1] = 2;
                    c.lo[2] = 0;
                    c.hi[2] = 1;
                    c.nout = l.reduction == AMP_REDUCTION_NONE ? (size_t)(l.N * l.inner) : 1;
                    c.ngrad = 1;
                    c.cond = 8.0 * (double)(l.C + l.N * l.inner) + 32;
                    c.fd_h = 1e-6;
                    c.fd_tol = 1e-7;
                    c.ctx = &l;
                    c.forward = class_forward;
                    c.backward = class_backward;
                    bw_check(&c);
                }
}

static void expect_class_torch(const char *what, int op, const int64_t *target, const double *w, double ls,
                               int reduction, const double *torch)
{
    static const double dnone[3] = { 0.5, -1.0, 2.0 }, dred[1] = { 0.75 };
    const double *dloss = reduction == AMP_REDUCTION_NONE ? dnone : dred;
    double dx[12], logp[12];
    if (op == 0) {
        amp_ref_log_softmax_f64(3, 4, 1, cx, logp);
        amp_nll_loss_backward_f64(3, 4, 1, target, w, -100, reduction, dloss, dx);
    } else if (op == 1) {
        amp_cross_entropy_backward_f64(3, 4, 1, cx, target, w, -100, ls, reduction, dloss, dx);
    } else {
        amp_cross_entropy_prob_backward_f64(3, 4, 1, cx, cpt, w, ls, reduction, dloss, dx);
    }
    bw_expect_torch(what, dx, torch, 12, 1e-13);
}

static void test_class_torch(void **state)
{
    (void)state;
    expect_class_torch("ce mean", 1, ct, NULL, 0, AMP_REDUCTION_MEAN, t_ce_mean);
    expect_class_torch("ce weight smoothing mean", 1, ct, cw, 0.2, AMP_REDUCTION_MEAN, t_ce_w_ls_mean);
    expect_class_torch("ce ignore weight smoothing sum", 1, ct_ign, cw, 0.1, AMP_REDUCTION_SUM, t_ce_ign_w_ls_sum);
    expect_class_torch("ce ignore none", 1, ct_ign, cw, 0.3, AMP_REDUCTION_NONE, t_ce_ign_none);
    expect_class_torch("ce ignore smoothing mean", 1, ct_ign, NULL, 0.3, AMP_REDUCTION_MEAN, t_ce_ign_ls_mean);
    expect_class_torch("nll mean", 0, ct, NULL, 0, AMP_REDUCTION_MEAN, t_nll_ce_mean);
    expect_class_torch("nll ignore weight mean", 0, ct_ign, cw, 0, AMP_REDUCTION_MEAN, t_nll_ign_w_mean);
    expect_class_torch("ce prob mean", 2, NULL, NULL, 0, AMP_REDUCTION_MEAN, t_cep_mean);
    expect_class_torch("ce prob weight smoothing sum", 2, NULL, cw, 0.2, AMP_REDUCTION_SUM, t_cep_w_ls_sum);
    expect_class_torch("ce prob smoothing none", 2, NULL, NULL, 0.1, AMP_REDUCTION_NONE, t_cep_ls_none);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pointwise_backward),
        cmocka_unit_test(test_pointwise_torch),
        cmocka_unit_test(test_class_backward),
        cmocka_unit_test(test_class_torch),
    };
    print_message("kernel set under test: %s\n", amp_isa_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
