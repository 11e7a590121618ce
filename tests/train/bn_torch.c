/*
 * bn_torch.c - batch_norm(training=true) in a compiled training step
 * against PyTorch: three SGD steps of tests/train/bn_torch.amp from fixed
 * values; each step's loss, the parameters and the running statistics after
 * the last must match what tests/train/bn_torch.py computed with PyTorch
 * (float32, CPU), within 1e-5 relative (the two sum in different orders).
 * The same model's _forward, evaluation mode, must normalise with the
 * running statistics and leave them alone.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bn_torch.h"

enum { B = 4, STEPS = 3 };

/* from tests/train/bn_torch.py */
static const double want_loss[] = {0.48545870184898376, -0.21740268170833588, -0.5691069960594177};
static const double want_fc_weight[] = {-0.5138508081436157, -0.22745469212532043, 0.09191182255744934,
                                        0.2567591965198517,  0.4957449734210968,   -0.500889778137207,
                                        -0.11911012977361679, -0.11167218536138535, 0.3808386027812958};
static const double want_fc_bias[] = {0.1250000149011612, -0.25, 0.3750000298023224};
static const double want_bn_weight[] = {0.9803611636161804, 0.45803138613700867, 1.5027743577957153};
static const double want_bn_bias[] = {0.12423397600650787, 0.19167287647724152, -0.6942170262336731};
static const double want_running_mean[] = {0.3989737331867218, -0.44139689207077026, 0.09662741422653198};
static const double want_running_var[] = {0.757338285446167, 1.563498616218567, 0.39023786783218384};

static int failed;

static void expect(const char *what, const float *got, const double *want, int n)
{
    for (int i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= 1e-5 * (fabs(want[i]) + 1e-2))) {
            fprintf(stderr, "bn_torch: %s[%d] = %.9g, PyTorch %.9g\n", what, i, (double)got[i], want[i]);
            failed = 1;
        }
}

int main(void)
{
    static float w[9], b[3] = {0.125f, -0.25f, 0.375f}, g[3] = {1, 0.5f, 1.5f}, beta[3] = {0, 0.25f, -0.5f};
    static float rm[3] = {0.5f, -0.5f, 0}, rv[3] = {1, 2, 0.5f}, x[B * 3], loss;
    static unsigned char storage[BNTORCH_STATE_BYTES], arena[BNTORCH_TRAIN_ARENA_BYTES(B)];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            w[i * 3 + j] = (float)(((i * 3 + j) % 5 - 2) / 4.0);
    bntorch_params init = {.fc_weight = w, .fc_bias = b, .bn_weight = g, .bn_bias = beta,
                           .bn_running_mean = rm, .bn_running_var = rv};
    bntorch_train_state s;
    bntorch_dims dims = {B};
    if (bntorch_train_init(&s, storage, sizeof storage, &init) != AMP_OK)
        return 1;
    for (int k = 0; k < STEPS; k++) {
        for (int i = 0; i < B; i++)
            for (int j = 0; j < 3; j++)
                x[i * 3 + j] = (float)(((k * 7 + i * 3 + j * 5) % 11 - 5) / 4.0);
        bntorch_inputs in = {x};
        bntorch_outputs out = {&loss};
        if (bntorch_train_step(&s, &in, &out, &dims, arena, sizeof arena) != AMP_OK)
            return 1;
        expect("loss", &loss, &want_loss[k], 1);
    }
    expect("fc.weight", s.fc_weight, want_fc_weight, 9);
    expect("fc.bias", s.fc_bias, want_fc_bias, 3);
    expect("bn.weight", s.bn_weight, want_bn_weight, 3);
    expect("bn.bias", s.bn_bias, want_bn_bias, 3);
    expect("bn.running_mean", s.bn_running_mean, want_running_mean, 3);
    expect("bn.running_var", s.bn_running_var, want_running_var, 3);

    /* evaluation mode: (linear(x) - running_mean) / sqrt(running_var + eps)
     * * weight + bias, with the statistics untouched */
    float before[6], z[B * 3];
    bntorch_params now;
    bntorch_train_params(&s, &now);
    memcpy(before, s.bn_running_mean, sizeof(float) * 3);
    memcpy(before + 3, s.bn_running_var, sizeof(float) * 3);
    static unsigned char farena[BNTORCH_ARENA_BYTES(B)];
    bntorch_inputs in = {x};
    bntorch_outputs out = {&loss};
    if (bntorch_forward(&now, &in, &out, &dims, farena, sizeof farena) != AMP_OK)
        return 1;
    double eval_loss = 0;
    for (int i = 0; i < B; i++)
        for (int c = 0; c < 3; c++) {
            double lin = s.fc_bias[c];
            for (int j = 0; j < 3; j++)
                lin += (double)x[i * 3 + j] * s.fc_weight[c * 3 + j];
            z[i * 3 + c] = (float)((lin - s.bn_running_mean[c]) / sqrt(s.bn_running_var[c] + 1e-5) * s.bn_weight[c] +
                                   s.bn_bias[c]);
            eval_loss += (double)z[i * 3 + c] * z[i * 3 + c] * x[i * 3 + c];
        }
    eval_loss /= B * 3;
    expect("eval-mode loss", &loss, &eval_loss, 1);
    if (memcmp(before, s.bn_running_mean, sizeof(float) * 3) || memcmp(before + 3, s.bn_running_var, sizeof(float) * 3)) {
        fprintf(stderr, "bn_torch: the evaluation-mode forward changed the running statistics\n");
        failed = 1;
    }
    if (!failed)
        printf("3 steps of batch_norm(training=true) match PyTorch (loss, parameters, running statistics); "
               "_forward normalises with the running statistics\n");
    return failed;
}
